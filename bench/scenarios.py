"""What the benchmark measures: the implementations, the scenarios, and the results of
their runs. Shared by the driver (bench/driving.py), the report (bench/reporting.py)
and the chart (bench/charting.py)."""

import statistics
from dataclasses import dataclass, field
from typing import Any

IMPLS = ("usergroups", "baseline0", "noauth", "baseline1", "baseline2")
IMPL_LABELS = {
    "usergroups": "usergroups",
    "baseline0": "(0) Django bare",
    "noauth": "(1-) DRF, no auth",
    "baseline1": "(1) DRF constant",
    "baseline2": "(2) DRF obvious",
}
PATHS = {
    "usergroups": "/api/user",
    "baseline0": "/bench/bare",
    "noauth": "/bench/noauth",
    "baseline1": "/bench/constant",
    "baseline2": "/bench/obvious",
}


@dataclass
class Scenario:
    key: str
    label: str
    dataset: str
    impl: str
    script: str
    connections: int | None = None  # None: --connections
    short: bool = False  # 1-connection runs use --short-duration
    deep: bool = False  # get: the group at depth 5 (bench.workload.DEEP_BODY), not the root
    variant: str = ""  # a server of the same data set with the settings of VARIANTS
    path: str = ""  # another path than the implementation's (PATHS)
    backends: tuple[str, ...] = ("sqlite", "postgres")

    @property
    def server(self) -> tuple[str, str]:
        """Which server answers: (data set, variant)."""
        return self.dataset, self.variant


# Servers with other settings than example_project's defaults, and why they are measured.
VARIANTS = {
    "": {},
    # Django's psycopg pool (DATABASES OPTIONS "pool", CONN_MAX_AGE 0) against the
    # default persistent connections (CONN_MAX_AGE 60, CONN_HEALTH_CHECKS).
    "pool": {"DATABASE_POOL": "true"},
}


SCENARIOS = [
    Scenario("get", "get, 1k groups", "1k", "baseline0", "get"),
    Scenario("get", "get, 1k groups", "1k", "baseline1", "get"),
    Scenario("get", "get, 1k groups", "1k", "usergroups", "get"),
    Scenario("get", "get, 1k groups", "1k", "baseline2", "get"),
    Scenario("get_deep", "get at depth 5, 1k groups", "1k", "usergroups", "get", deep=True),
    Scenario(
        "get_pool",
        "get, 1k groups, psycopg pool",
        "1k",
        "usergroups",
        "get",
        variant="pool",
        backends=("postgres",),
    ),
    Scenario(
        "get_pool",
        "get, 1k groups, psycopg pool",
        "1k",
        "baseline1",
        "get",
        variant="pool",
        backends=("postgres",),
    ),
    # Embed tokens: a host's DRF view behind EmbedTokenAuthentication answering the
    # token's variables (bench/site/views.py), and minting, both for the target group.
    Scenario(
        "embed_verify",
        "embed token verification",
        "1k",
        "usergroups",
        "plain_get",
        path="/bench/embed",
    ),
    # The same body from a DRF view with no authentication: what no verification costs.
    Scenario("embed_verify", "embed token verification", "1k", "noauth", "plain_get"),
    Scenario(
        "embed_mint",
        "embed token minting",
        "1k",
        "usergroups",
        "post",
        path="/api/user/embed-token",
    ),
    Scenario("get_1m", "get, 1M groups", "1m", "usergroups", "get"),
    Scenario("create", "create", "scratch", "usergroups", "create"),
    Scenario("create", "create", "scratch", "baseline2", "create"),
    Scenario("get_1c", "get, 1 connection", "1k", "usergroups", "get", 1, True),
    Scenario("rotate", "rotation chain, 1 connection", "scratch", "usergroups", "rotate", 1, True),
    Scenario("rotate", "rotation chain, 1 connection", "scratch", "baseline2", "rotate", 1, True),
]
SCENARIO_ORDER = [
    "get",
    "get_pool",
    "embed_verify",
    "embed_mint",
    "get_deep",
    "get_1m",
    "create",
    "get_1c",
    "rotate",
]


def scenarios_for(backend: str, only: frozenset[str] = frozenset()) -> list[Scenario]:
    """The backend's scenarios; with ``only``, just those whose key it names."""
    return [s for s in SCENARIOS if backend in s.backends and (not only or s.key in only)]


def first_scenario(key: str) -> Scenario:
    """The first scenario measured under ``key`` (all under one key share label and
    connections)."""
    return next(s for s in SCENARIOS if s.key == key)


@dataclass
class Results:
    # (backend, scenario key, impl) -> one wrk result per round
    runs: dict[tuple[str, str, str], list[dict[str, Any]]] = field(default_factory=dict)
    rss: dict[str, Any] = field(default_factory=dict)  # the memory mode's findings
    notes: list[str] = field(default_factory=list)

    def add(self, backend: str, scenario: Scenario, result: dict[str, Any]) -> None:
        self.runs.setdefault((backend, scenario.key, scenario.impl), []).append(result)

    def median(self, backend: str, key: str, impl: str, metric: str) -> float | None:
        values = [r[metric] for r in self.runs.get((backend, key, impl), [])]
        return statistics.median(values) if values else None

"""What the benchmark measures: the runs (a scenario of one implementation), the ratios
between them with their targets, and the results. Shared by bench/driving.py and
bench/reporting.py."""

import statistics
from dataclasses import dataclass, field, replace
from typing import Any

# The site's telemetry, a server each (bench/driving.py): the OpenTelemetry API alone, as
# the app ships (every row's), and for the rows with_telemetry adds, none at all, the SDK
# and its Prometheus exporter as the example project wires them, or the API alone again on
# a server that serves that row alone, like the other two: the first server serves every
# other row too, and ran 3-5% below them whatever its instruments did (2026-11-29).
API, NONE, SDK, API_ALONE = "api", "none", "sdk", "api-alone"


@dataclass(frozen=True)
class Run:
    key: str  # the scenario: get, verify, mint, create, rotate
    impl: str  # usergroups, or the baseline's name
    path: str
    script: str  # bench/lua/<script>.lua
    secret: str  # which credential it sends (bench/driving.py: Server.authorization)
    label: str
    connections: int | None = None  # None: --connections
    end_user: bool = False  # the mint body names an end user (bench/workload.py)
    telemetry: str = API  # which server it loads


def with_telemetry(run: Run) -> list[Run]:
    """The app's ``run``, then the same on the site without instruments, on the site
    with the SDK, and on the site with the API alone, each a server of its own (issue 34:
    PostgreSQL only, see :func:`runs_for`)."""
    return [
        run,
        replace(
            run, impl="instrumented", label="usergroups, a server of its own", telemetry=API_ALONE
        ),
        replace(
            run, impl="uninstrumented", label="usergroups, without instruments", telemetry=NONE
        ),
        replace(run, impl="sdk", label="usergroups, SDK and Prometheus exporter", telemetry=SDK),
    ]


RUNS = [
    *with_telemetry(Run("get", "usergroups", "/api/user", "get", "api_key", "usergroups")),
    Run("get", "authtoken", "/bench/authtoken", "get", "authtoken", "DRF authtoken, constant"),
    *with_telemetry(
        Run("verify", "usergroups", "/bench/embed", "plain_get", "embed_token", "usergroups")
    ),
    Run(
        "verify",
        "end_user",
        "/bench/embed",
        "plain_get",
        "embed_token_end_user",
        "usergroups, a token naming an end user",
    ),
    Run("verify", "knox", "/bench/knox", "plain_get", "knox", "knox TokenAuthentication"),
    Run(
        "verify",
        "simplejwt",
        "/bench/simplejwt",
        "plain_get",
        "simplejwt_token",
        "simplejwt JWTStatelessUserAuthentication",
    ),
    *with_telemetry(
        Run("mint", "usergroups", "/api/user/embed-token", "post", "api_key", "usergroups")
    ),
    Run(
        "mint",
        "end_user",
        "/api/user/embed-token",
        "post",
        "api_key",
        "usergroups, for an unchanged end user",
        end_user=True,
    ),
    Run("mint", "simplejwt", "/bench/simplejwt/mint", "post", "authtoken", "simplejwt, by hand"),
    Run("create", "usergroups", "/api/user", "create", "api_key", "usergroups"),
    # A chain: each request rotates the token the last answer gave, so one connection.
    Run("rotate", "usergroups", "/api/user", "rotate", "api_key", "usergroups", connections=1),
]
LABELS = {
    "get": "get of an existing group",
    "verify": "embed token verification",
    "mint": "embed token minting",
    "create": "create (a new group each request)",
    "rotate": "rotation chain, 1 connection",
}
# Not wrk runs: bench/webhooks.py and bench/propagation.py (PostgreSQL), after the rounds,
# and bench/scale.py (PostgreSQL, a database of its own), after them.
WEBHOOKS = "webhooks"
PROPAGATION = "propagation"
SCALE = "scale"
# bench/instruments.py (PostgreSQL, after the rounds): the instruments' cost in process.
INSTRUMENTS = "instruments"
#: Issue 34: with the API alone, each of get, verification and the mint at least this
#: share of its throughput without instruments.
INSTRUMENTS_FLOOR = 0.98


@dataclass(frozen=True)
class Ratio:
    """Requests/s of ``top`` over ``bottom`` (each a (scenario, impl)), and its target:
    one floor, or a floor per backend (0.3's own ratio where the target is "no worse
    than 0.3")."""

    name: str
    top: tuple[str, str]
    bottom: tuple[str, str]
    floor: float | dict[str, float]

    def floor_for(self, backend: str) -> float:
        return self.floor if isinstance(self.floor, float) else self.floor[backend]


# 0.3 (5d072e0's run of 22:59 UTC, 2026-11-25, bench/RESULTS.md): req/s, p50 ms, p99 ms,
# and the authtoken view's req/s in the same rounds.
V03 = {
    ("sqlite", "create"): (456, 16.71, 26.02, 1499),
    ("postgres", "create"): (327, 24.02, 34.82, 1099),
    ("sqlite", "rotate"): (274, 3.34, 7.79, 1499),
    ("postgres", "rotate"): (162, 5.95, 7.66, 1099),
}
#: 0.3's ratios (the same run) of the rows the read model must lift on PostgreSQL, and
#: that SQLite, which reads the database as 0.3 did, must not fall below (issue 26).
V03_RATIOS = {
    "get": 0.58,
    "verify / knox": 1.09,
    "verify / simplejwt": 0.65,
    "mint": 0.51,
}


def v03_ratio(key: str) -> dict[str, float]:
    return {b: round(V03[(b, key)][0] / V03[(b, key)][3], 2) for b in ("sqlite", "postgres")}


def read_model_target(postgres: float, row: str) -> dict[str, float]:
    """PostgreSQL's target; SQLite's is 0.3's own ratio."""
    return {"sqlite": V03_RATIOS[row], "postgres": postgres}


RATIOS = [
    Ratio(
        "get of an existing group / DRF authtoken constant view",
        ("get", "usergroups"),
        ("get", "authtoken"),
        read_model_target(1.2, "get"),
    ),
    Ratio(
        "embed verification on a host view / knox",
        ("verify", "usergroups"),
        ("verify", "knox"),
        read_model_target(2.0, "verify / knox"),
    ),
    Ratio(
        "embed verification / simplejwt stateless (no revocation)",
        ("verify", "usergroups"),
        ("verify", "simplejwt"),
        read_model_target(1.0, "verify / simplejwt"),
    ),
    Ratio(
        "mint / hand-written simplejwt mint",
        ("mint", "usergroups"),
        ("mint", "simplejwt"),
        read_model_target(1.0, "mint"),
    ),
    # Issue 21: naming an end user costs at most 10%.
    Ratio(
        "verification of a token naming an end user / one naming none",
        ("verify", "end_user"),
        ("verify", "usergroups"),
        0.9,
    ),
    Ratio(
        "mint for an unchanged end user / mint naming none",
        ("mint", "end_user"),
        ("mint", "usergroups"),
        0.9,
    ),
    # Issue 34: what the instruments cost, against the same tree without them.
    *(
        Ratio(f"{LABELS[key]}, {side}", (key, impl), (key, "uninstrumented"), floor)
        for key in ("get", "verify", "mint")
        for side, impl, floor in (
            ("API alone (no SDK) / without instruments", "instrumented", 0.98),
            ("SDK and Prometheus exporter / without instruments", "sdk", 0.9),
        )
    ),
    Ratio(
        "create / DRF authtoken constant view",
        ("create", "usergroups"),
        ("get", "authtoken"),
        v03_ratio("create"),
    ),
    Ratio(
        "rotation (1 connection) / DRF authtoken constant view",
        ("rotate", "usergroups"),
        ("get", "authtoken"),
        v03_ratio("rotate"),
    ),
]


def runs_for(only: frozenset[str] = frozenset(), backend: str = "postgres") -> list[Run]:
    """The runs of the scenarios ``only`` names (all of them without it) on ``backend``:
    those of another telemetry than the API's on PostgreSQL alone."""
    return [
        run
        for run in RUNS
        if (not only or run.key in only) and (run.telemetry == API or backend == "postgres")
    ]


@dataclass
class Results:
    # (backend, scenario, impl) -> one wrk result per round
    runs: dict[tuple[str, str, str], list[dict[str, Any]]] = field(default_factory=dict)
    # (backend, "burst" or "steady") -> bench/webhooks.py's figures
    webhooks: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    # bench/instruments.py's ratio of each block, "api" (API alone / none) and "control"
    # (API alone / API alone) -> scenario -> ratios
    instruments: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, backend: str, run: Run, result: dict[str, Any]) -> None:
        self.runs.setdefault((backend, run.key, run.impl), []).append(result)

    def median(self, backend: str, key: str, impl: str, metric: str) -> float | None:
        values = [r[metric] for r in self.runs.get((backend, key, impl), [])]
        return statistics.median(values) if values else None

    def round_ratios(
        self, backend: str, top: tuple[str, str], bottom: tuple[str, str]
    ) -> list[float]:
        """Requests/s of ``top`` over ``bottom`` in each round: the two ran in the same
        round, seconds apart, so what drifts over a run (the machine's other load, the
        database's caches) divides out."""
        tops = self.runs.get((backend, *top), [])
        bottoms = self.runs.get((backend, *bottom), [])
        return [t["rps"] / b["rps"] for t, b in zip(tops, bottoms, strict=False)]


# The scale step (bench/scale.py): what it runs, its targets (issue 32), its results.


@dataclass(frozen=True)
class Plan:
    """What the scale step runs (bench/scale.py's options, of the same names)."""

    workers: tuple[int, ...] = (2, 8, 32, 64)  # the counts of the idle step
    # Seconds measured idle: each count's rate is the difference of two cut-bounded
    # intervals, whose coming back (the listeners' reconnection, a request's second of
    # beats) varies by some tens of commits at 32 workers and more: over 40 s, ~1 a second.
    idle: float = 40
    warm: float = 2  # seconds of load before each measured verification run
    seconds: float = 8  # of each measured verification run
    live_tokens: int = 200
    churn_rate: float = 10  # persons minted a second
    burners: int = 4  # CPU-bound processes
    memory_tokens: int = 10_000


SCALE_SMOKE = Plan(workers=(2,), idle=2, warm=1, seconds=2, live_tokens=20, memory_tokens=300)

IDLE_COMMITS = 60  # a second, at most, at every count of workers
IDLE_FLAT = 1.2  # the most commits a second at any count over those at the fewest workers,
IDLE_SLACK = 1.0  # or over them plus this many: the step's resolution (Plan.idle)
LISTEN_CPU = 5.0  # % of one core, the listening and beating server processes...
LISTEN_CPU_AT = 32  # ...at this many workers
READS = 0.05  # verifications that read the database, of each, once warm
READ_MODEL_MAX_BYTES = 64 * 2**20  # usergroups/conf.py's default: the memory step's bound


@dataclass
class IdleRow:
    workers: int
    listening: int  # sessions at the end
    commits: float  # a second
    listen_cpu: float  # % of one core: the listening and beating server processes
    beat_cpu: float  # % of one core: the beating one alone
    app_cpu: float  # % of one core: the gunicorn workers
    wakes: float  # a second, of each listening server process


@dataclass
class ChurnRow:
    phase: str
    rps: float
    ok: int  # 200s
    errors: int  # socket errors and refusals, which no live token should get
    reads: int  # scans of the denylist
    minted: float | None  # persons minted a second, when the phase mints

    @property
    def per_verification(self) -> float:
        return self.reads / self.ok if self.ok else float("nan")


@dataclass
class MemoryRow:
    tokens: int
    properties_bytes: int
    rss_before: int  # bytes, after the first hundred tokens
    rss_after: int  # after every token
    peak: int
    served: int  # 200s
    again: int  # 200s of the second pass
    again_reads: int  # the denylist's scans in it

    @property
    def growth(self) -> int:
        return self.rss_after - self.rss_before


@dataclass
class ScaleResults:
    plan: Plan
    idle: list[IdleRow] = field(default_factory=list)
    churn: list[ChurnRow] = field(default_factory=list)
    memory: MemoryRow | None = None
    notes: list[str] = field(default_factory=list)
    elapsed: float = 0.0  # seconds
    loads: tuple[float, float] = (0.0, 0.0)  # the 1-minute load average, first and last

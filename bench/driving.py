"""Driving the benchmark: a gunicorn server per data set, wrk runs against it, the rounds
of all scenarios, and the memory mode.

Servers run ``bench.site`` (``example_project`` plus the two baselines) through the
tests' gunicorn harness (:mod:`tests.support.gunicorn`), with the environment of
bench/datasets.py; wrk loads them with the Lua scripts in bench/lua, which print one
``BENCH_JSON`` line of figures.
"""

import argparse
import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

from bench import BENCH, OUT, log
from bench.datasets import server_env
from bench.profiling import profile
from bench.scenarios import IMPL_LABELS, PATHS, VARIANTS, Results, Scenario, scenarios_for
from bench.workload import TARGET_ID
from tests.support.gunicorn import Gunicorn
from tests.support.http import call_api

LUA = BENCH / "lua"


class Server:
    """``bench.site`` on one data set, and the credentials its seeding made."""

    def __init__(self, backend: str, dataset: str, info: dict[str, Any], variant: str = "") -> None:
        self.backend, self.dataset, self.info, self.variant = backend, dataset, info, variant
        self.log_path = OUT / f"gunicorn-{backend}-{dataset}{variant and '-' + variant}.log"
        self.gunicorn: Gunicorn | None = None

    def start(self, workers: int, *extra: str) -> None:
        self.log_path.unlink(missing_ok=True)  # this server's output only
        self.gunicorn = Gunicorn(
            {**server_env(self.backend, self.dataset), **VARIANTS[self.variant]},
            self.log_path,
            workers,
            "--log-level",
            "warning",
            *extra,
            app="bench.site.wsgi:application",
        ).start()

    def _running(self) -> Gunicorn:
        if self.gunicorn is None:
            raise RuntimeError(f"the {self.backend}/{self.dataset} server was not started")
        return self.gunicorn

    @property
    def base_url(self) -> str:
        return self._running().base_url

    def worker_pids(self) -> list[int]:
        return self._running().worker_pids()

    def stop(self) -> None:
        if self.gunicorn is not None:
            self.gunicorn.stop()

    def key(self, impl: str) -> str:
        """The secret ``impl`` authenticates with: an API key, or baseline (2)'s DRF token
        (baseline (1) takes it too)."""
        return str(self.info["api_key"] if impl == "usergroups" else self.info["drf_token"])

    def embed_token(self) -> str:
        """A new embed token for the target group (valid for the default 15 minutes)."""
        body = {"user_group_id": TARGET_ID}
        status, answer = call_api(
            self.base_url, self.key("usergroups"), "POST", body, path="/api/user/embed-token"
        )
        if status != 200:
            raise RuntimeError(f"minting answered {status}: {answer}")
        return str(answer["embed_token"])

    def get_or_create(self, impl: str, body: dict[str, Any]) -> dict[str, Any]:
        """``impl``'s answer to a get-or-create of ``body``; raises unless it is a 200."""
        status, answer = call_api(self.base_url, self.key(impl), "GET", body, path=PATHS[impl])
        if status != 200:
            raise RuntimeError(f"{impl} answered {status}: {answer}")
        return dict(answer)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def get_body() -> str:
    from bench.workload import GET_BODY

    return json.dumps(GET_BODY)


def deep_body() -> str:
    from bench.workload import DEEP_BODY

    return json.dumps(DEEP_BODY)


def wrk(
    server: Server,
    impl: str,
    script: str,
    connections: int,
    threads: int,
    duration: float,
    path: str = "",
    **env_extra: str,
) -> dict[str, Any]:
    env = {**os.environ, "BENCH_AUTH": f"Token {server.key(impl)}", **env_extra}
    cmd = [
        "wrk",
        f"-t{min(threads, connections)}",
        f"-c{connections}",
        f"-d{max(1, round(duration))}s",
        "--timeout",
        "10s",
        "-s",
        str(LUA / f"{script}.lua"),
        server.base_url + (path or PATHS[impl]),
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=duration + 60)
    for line in done.stdout.splitlines():
        if line.startswith("BENCH_JSON "):
            result: dict[str, Any] = json.loads(line[len("BENCH_JSON ") :])
            result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
            result["errors"] = (
                sum(
                    result[k]
                    for k in ("connect_errors", "read_errors", "write_errors", "status_errors")
                )
                + result["timeouts"]
            )
            return result
    raise RuntimeError(f"wrk gave no result: {done.stdout}\n{done.stderr}")


def run_scenario(
    scenario: Scenario,
    server: Server,
    args: argparse.Namespace,
    body: str,
    duration: float | None = None,
) -> dict[str, Any]:
    connections = scenario.connections or args.connections
    if duration is None:
        duration = args.short_duration if scenario.short else args.duration
    extra: dict[str, str] = {}
    if scenario.script == "get":
        extra["BENCH_BODY"] = deep_body() if scenario.deep else body
    elif scenario.script == "create":
        extra["BENCH_RUN_ID"] = f"new-{uuid.uuid4().hex[:12]}"
    elif scenario.script == "rotate":
        # A fresh group per run; the chain starts from its token.
        start = server.get_or_create(scenario.impl, {"user_group_id": f"chain-{uuid.uuid4().hex}"})
        extra["BENCH_TOKEN"] = start["user_group"]["token"]
    elif scenario.key == "embed_mint":
        extra["BENCH_BODY"] = json.dumps({"user_group_id": TARGET_ID})
    elif scenario.key == "embed_verify":
        extra["BENCH_AUTH"] = f"Embed {server.embed_token()}"
    return wrk(
        server,
        scenario.impl,
        scenario.script,
        connections,
        args.threads,
        duration,
        scenario.path,
        **extra,
    )


def measure_backend(
    backend: str,
    infos: dict[str, dict[str, Any]],
    args: argparse.Namespace,
    results: Results,
    body: str,
) -> None:
    scenarios = scenarios_for(backend, args.only)
    servers = {
        (ds, variant): Server(backend, ds, infos[ds], variant)
        for ds, variant in dict.fromkeys(s.server for s in scenarios)
    }
    try:
        for server in servers.values():
            server.start(args.workers)
        log(f"{backend}: servers up; warming up")
        for scenario in scenarios:
            run_scenario(scenario, servers[scenario.server], args, body, duration=1)
        if args.profile:
            get = next(s for s in scenarios if s.key == "get" and s.impl == "usergroups")
            profile(
                backend,
                servers[get.server].worker_pids()[0],
                lambda: run_scenario(get, servers[get.server], args, body, duration=7),
            )
        for round_no in range(args.rounds):
            order = scenarios if round_no % 2 == 0 else list(reversed(scenarios))
            for scenario in order:
                result = run_scenario(scenario, servers[scenario.server], args, body)
                results.add(backend, scenario, result)
                if result["errors"]:
                    results.notes.append(
                        f"{backend} {scenario.label} {scenario.impl} round {round_no + 1}: "
                        f"{result['errors']} errors/non-2xx of {result['requests']}"
                    )
                log(
                    f"{backend} round {round_no + 1}/{args.rounds} {scenario.label:30s} "
                    f"{IMPL_LABELS[scenario.impl]:17s} {result['rps']:8.0f} req/s  "
                    f"p50 {result['p50_us'] / 1000:6.2f} ms  p99 {result['p99_us'] / 1000:6.2f} ms"
                    + (f"  ERRORS {result['errors']}" if result["errors"] else "")
                )
    finally:
        for server in servers.values():
            server.stop()


def measure_rss(
    backend: str, info: dict[str, Any], args: argparse.Namespace, results: Results, body: str
) -> None:
    """RSS of each worker after 1,000 and after --rss-requests requests of get."""
    server = Server(backend, "1k", info)
    counts = OUT / "counts"
    shutil.rmtree(counts, ignore_errors=True)
    counts.mkdir()
    os.environ["BENCH_COUNT_DIR"] = str(counts)

    def served(pid: int) -> int:
        path = counts / f"requests-{pid}"
        return int(path.read_text()) if path.exists() else 0

    try:
        server.start(args.workers, "--config", "python:bench.site.gunicorn_count")
        threads = args.threads
        total, rps = 0, 2000.0  # optimistic: the first runs are short

        pids = server.worker_pids()

        def send_until(per_worker: int) -> None:
            # Until every worker has served ``per_worker`` requests, in runs of wrk sized
            # from the last rate (a run overshoots by at most its own length).
            nonlocal total, rps
            while (least := min(served(pid) for pid in pids)) < per_worker:
                remaining = (per_worker - least) * args.workers
                chunk = wrk(
                    server,
                    "usergroups",
                    "get",
                    args.connections,
                    threads,
                    max(1, min(remaining / rps, 20)),
                    BENCH_BODY=body,
                )
                total += chunk["requests"]
                rps = max(chunk["rps"], 50.0)
                if chunk["errors"]:
                    results.notes.append(f"memory mode: {chunk['errors']} errors")
                if server.worker_pids() != pids:
                    raise RuntimeError(f"a gunicorn worker was replaced; see {server.log_path}")

        send_until(1000)
        first_total = total
        after_1k = {pid: (rss_kib(pid), served(pid)) for pid in pids}
        send_until(args.rss_requests)
        after = {pid: (rss_kib(pid), served(pid)) for pid in pids}
        results.rss = {
            "backend": backend,
            "requests_first": first_total,
            "requests_total": total,
            "workers": [
                {
                    "pid": pid,
                    "rss_1k_kib": after_1k[pid][0],
                    "served_1k": after_1k[pid][1],
                    "rss_end_kib": after[pid][0],
                    "served_end": after[pid][1],
                }
                for pid in after_1k
            ],
        }
        for worker in results.rss["workers"]:
            log(
                f"memory {backend}: worker {worker['pid']}: {worker['rss_1k_kib'] / 1024:.1f} MiB "
                f"after {worker['served_1k']:,} requests, {worker['rss_end_kib'] / 1024:.1f} MiB "
                f"after {worker['served_end']:,}"
            )
    finally:
        server.stop()

"""``make bench``: django-usergroups side by side with what a Django user would run instead.

Serves ``bench.site`` (``example_project`` as shipped, plus two baselines at extra URLs,
in the same processes) under gunicorn with 2 sync workers on loopback, on SQLite and on
PostgreSQL, and loads it from wrk (Debian's package) with the Lua scripts in bench/lua:

* baseline (1): ``/bench/constant``, a DRF ``APIView`` behind DRF's ``TokenAuthentication``
  answering a constant body of the size of a get-or-create answer;
* baseline (2): ``/bench/obvious``, the service written the obvious way with DRF built-ins
  (``ModelSerializer`` with nested mappings, ``get_or_create``, ``prefetch_related``,
  plain tokens);
* usergroups: ``/api/user``.

Each data set has its own SQLite file or PostgreSQL schema (of database ``bench``) and its
own server: ``1k`` (1,000 groups, read-only scenarios), ``1m`` (1,000,000 groups) and
``scratch`` (creation and rotation, which write). Runs alternate implementations and
scenarios within each round (reversed every other round); the table has the medians of
the rounds. A memory mode then counts the RSS of each worker after 1,000 and after
100,000 requests. Results: a table on stdout, bench/RESULTS.md (between its markers),
bench/results.png.

    python -m bench.run [--rounds 3] [--duration 5] [--backends sqlite,postgres] ...
"""

import argparse
import concurrent.futures
import datetime
import json
import os
import platform
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
OUT = BENCH / "out"
LUA = BENCH / "lua"
HOST = "127.0.0.1"  # loopback only
SECRET = "bench-only-secret-key-not-for-production-0123456789abcdefghij"
PG_URL = os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432/bench")
IMPLS = ("usergroups", "baseline1", "baseline2")
IMPL_LABELS = {
    "usergroups": "usergroups",
    "baseline1": "(1) DRF constant",
    "baseline2": "(2) DRF obvious",
}
PATHS = {"usergroups": "/api/user", "baseline1": "/bench/constant", "baseline2": "/bench/obvious"}
MARK_BEGIN = "<!-- BEGIN RESULTS (written by bench/run.py) -->"
MARK_END = "<!-- END RESULTS -->"


@dataclass
class Scenario:
    key: str
    label: str
    dataset: str
    impl: str
    script: str
    connections: int | None = None  # None: --connections
    short: bool = False  # 1-connection runs use --short-duration


SCENARIOS = [
    Scenario("get", "get, 1k groups", "1k", "baseline1", "get"),
    Scenario("get", "get, 1k groups", "1k", "usergroups", "get"),
    Scenario("get", "get, 1k groups", "1k", "baseline2", "get"),
    Scenario("get_1m", "get, 1M groups", "1m", "usergroups", "get"),
    Scenario("create", "create", "scratch", "usergroups", "create"),
    Scenario("create", "create", "scratch", "baseline2", "create"),
    Scenario("get_1c", "get, 1 connection", "1k", "usergroups", "get", 1, True),
    Scenario("rotate", "rotation chain, 1 connection", "scratch", "usergroups", "rotate", 1, True),
    Scenario("rotate", "rotation chain, 1 connection", "scratch", "baseline2", "rotate", 1, True),
]
SCENARIO_ORDER = ["get", "get_1m", "create", "get_1c", "rotate"]


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


def load1() -> float:
    return os.getloadavg()[0]


# --- databases -------------------------------------------------------------------------


def server_env(backend: str, dataset: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "DATABASE_", "USERGROUPS_", "BENCH_PG_SCHEMA"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="bench.site.settings",
        DJANGO_SECRET_KEY=SECRET,
        DJANGO_DEBUG="false",
        DJANGO_ALLOWED_HOSTS=f"{HOST},localhost",
        PYTHONUNBUFFERED="1",
    )
    if backend == "sqlite":
        env["DATABASE_URL"] = f"sqlite:///{OUT / f'sqlite-{dataset}.sqlite3'}"
    else:
        env["DATABASE_URL"] = PG_URL
        env["BENCH_PG_SCHEMA"] = f"bench_{dataset}"
    return env


def pg_connect(dbname: str | None = None):
    import psycopg

    conninfo = psycopg.conninfo.conninfo_to_dict(PG_URL)
    if dbname:
        conninfo["dbname"] = dbname
    return psycopg.connect(**conninfo, autocommit=True, connect_timeout=5)


def pg_available() -> bool:
    try:
        with pg_connect("postgres") as conn:
            name = PG_URL.rsplit("/", 1)[-1].split("?")[0]
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
                conn.execute(f'CREATE DATABASE "{name}"')
                log(f"created PostgreSQL database {name}")
        return True
    except Exception as exc:  # noqa: BLE001
        log(f"PostgreSQL is not reachable at {PG_URL}: {exc}")
        return False


def prepare(backend: str, dataset: str, rows: int, reuse: bool) -> dict:
    """Migrate and seed one data set; its credentials (cached in bench/out for --reuse)."""
    info_path = OUT / f"{backend}-{dataset}.json"
    env = server_env(backend, dataset)
    if reuse and info_path.exists():
        info = json.loads(info_path.read_text())
        if info.get("rows") == rows and (
            backend != "sqlite" or (OUT / f"sqlite-{dataset}.sqlite3").exists()
        ):
            return info
    started = time.monotonic()
    if backend == "sqlite":
        for suffix in ("", "-wal", "-shm"):
            (OUT / f"sqlite-{dataset}.sqlite3{suffix}").unlink(missing_ok=True)
        shutil.copyfile(sqlite_template(), OUT / f"sqlite-{dataset}.sqlite3")
    else:
        with pg_connect() as conn:
            schema = env["BENCH_PG_SCHEMA"]
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            conn.execute(f"CREATE SCHEMA {schema}")
        run_checked([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], env)
    seeded = run_checked([sys.executable, "-m", "bench.seed", str(rows)], env)
    info = json.loads(seeded.strip().splitlines()[-1])
    info["rows"] = rows
    info_path.write_text(json.dumps(info))
    log(
        f"{backend}/{dataset}: {info['groups']:,} groups ready in "
        f"{time.monotonic() - started:.0f} s (seeding {info['seconds']} s)"
    )
    return info


_template_lock = threading.Lock()


def sqlite_template() -> Path:
    """A migrated, empty SQLite file, made once per run and copied for each data set."""
    path = OUT / "sqlite-template.sqlite3"
    with _template_lock:
        if not getattr(sqlite_template, "done", False):
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            env = server_env("sqlite", "template")
            run_checked([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], env)
            # Fold the WAL into the file, so that a plain copy is complete.
            import sqlite3

            with sqlite3.connect(path) as conn:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            sqlite_template.done = True
    return path


def run_checked(cmd: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed:\n{done.stderr[-4000:]}")
    return done.stdout


# --- servers ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    backend: str
    dataset: str
    info: dict
    port: int = 0
    process: subprocess.Popen | None = None
    logfile: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self, workers: int, *extra: str) -> None:
        self.port = free_port()
        self.logfile = OUT / f"gunicorn-{self.backend}-{self.dataset}.log"
        cmd = [
            sys.executable,
            "-m",
            "gunicorn",
            "bench.site.wsgi:application",
            "--workers",
            str(workers),
            "--bind",
            f"{HOST}:{self.port}",
            "--log-level",
            "warning",
            *extra,
        ]
        with open(self.logfile, "w") as logfile:
            self.process = subprocess.Popen(
                cmd,
                cwd=ROOT,
                env=server_env(self.backend, self.dataset),
                stdout=logfile,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited; see {self.logfile}")
            try:
                urllib.request.urlopen(self.base_url + "/bench/constant", timeout=2)
            except urllib.error.HTTPError as exc:
                if exc.code == 401:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"gunicorn did not answer in {timeout} s; see {self.logfile}")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def worker_pids(self) -> list[int]:
        pid = self.process.pid
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return sorted(int(child) for child in children)

    def auth(self, impl: str) -> str:
        return "Token " + (self.info["api_key"] if impl == "usergroups" else self.info["drf_token"])

    def request(self, impl: str, body: dict, method: str = "GET") -> dict:
        request = urllib.request.Request(
            self.base_url + PATHS[impl],
            data=json.dumps(body).encode(),
            method=method,
            headers={"Authorization": self.auth(impl), "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


# --- load ------------------------------------------------------------------------------


def get_body() -> str:
    from bench.workload import GET_BODY

    return json.dumps(GET_BODY)


def wrk(
    server: Server,
    impl: str,
    script: str,
    connections: int,
    threads: int,
    duration: float,
    **env_extra: str,
) -> dict:
    env = dict(os.environ, BENCH_AUTH=server.auth(impl), **env_extra)
    cmd = [
        "wrk",
        f"-t{min(threads, connections)}",
        f"-c{connections}",
        f"-d{max(1, round(duration))}s",
        "--timeout",
        "10s",
        "-s",
        str(LUA / f"{script}.lua"),
        server.base_url + PATHS[impl],
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=duration + 60)
    for line in done.stdout.splitlines():
        if line.startswith("BENCH_JSON "):
            result = json.loads(line[len("BENCH_JSON ") :])
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
    scenario: Scenario, server: Server, args, body: str, duration: float | None = None
) -> dict:
    connections = scenario.connections or args.connections
    if duration is None:
        duration = args.short_duration if scenario.short else args.duration
    extra: dict[str, str] = {}
    if scenario.script == "get":
        extra["BENCH_BODY"] = body
    elif scenario.script == "create":
        extra["BENCH_RUN_ID"] = f"new-{uuid.uuid4().hex[:12]}"
    elif scenario.script == "rotate":
        # A fresh group per run; the chain starts from its token.
        start = server.request(scenario.impl, {"user_group_id": f"chain-{uuid.uuid4().hex}"})
        extra["BENCH_TOKEN"] = start["user_group"]["token"]
    return wrk(server, scenario.impl, scenario.script, connections, args.threads, duration, **extra)


# --- the run ---------------------------------------------------------------------------


@dataclass
class Results:
    runs: dict = field(default_factory=dict)  # (backend, key, impl) -> [result, ...]
    rss: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    def add(self, backend: str, scenario: Scenario, result: dict) -> None:
        self.runs.setdefault((backend, scenario.key, scenario.impl), []).append(result)

    def median(self, backend: str, key: str, impl: str, metric: str) -> float | None:
        values = [r[metric] for r in self.runs.get((backend, key, impl), [])]
        return statistics.median(values) if values else None


def measure_backend(backend: str, infos: dict, args, results: Results, body: str) -> None:
    servers = {ds: Server(backend, ds, infos[ds]) for ds in ("1k", "1m", "scratch")}
    try:
        for server in servers.values():
            server.start(args.workers)
        for server in servers.values():
            server.wait_ready()
        log(f"{backend}: servers up; warming up")
        for scenario in SCENARIOS:
            run_scenario(scenario, servers[scenario.dataset], args, body, duration=1)
        if args.profile:
            profile(backend, servers["1k"], args, body)
        for round_no in range(args.rounds):
            order = SCENARIOS if round_no % 2 == 0 else list(reversed(SCENARIOS))
            for scenario in order:
                result = run_scenario(scenario, servers[scenario.dataset], args, body)
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


def measure_rss(backend: str, info: dict, args, results: Results, body: str) -> None:
    """RSS of each worker after 1,000 and after --rss-requests requests of get."""
    server = Server(backend, "1k", info)
    counts = OUT / "counts"
    shutil.rmtree(counts, ignore_errors=True)
    counts.mkdir()
    os.environ["BENCH_COUNT_DIR"] = str(counts)
    server.start(args.workers, "--config", "python:bench.site.gunicorn_count")

    def served(pid: int) -> int:
        path = counts / f"requests-{pid}"
        return int(path.read_text()) if path.exists() else 0

    try:
        server.wait_ready()
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
                    raise RuntimeError(f"a gunicorn worker was replaced; see {server.logfile}")

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


def profile(backend: str, server: Server, args, body: str) -> None:
    """py-spy on one worker while wrk loads the get path: bench/out/profile-*.{txt,svg}."""
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    pid = server.worker_pids()[0]
    scenario = next(s for s in SCENARIOS if s.key == "get" and s.impl == "usergroups")
    for fmt, suffix in (("raw", "txt"), ("flamegraph", "svg")):
        out = OUT / f"profile-{backend}.{suffix}"
        spy = subprocess.Popen(
            [py_spy, "record", "-p", str(pid), "-d", "6", "-r", "250", "-f", fmt, "-o", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        run_scenario(scenario, server, args, body, duration=7)
        spy.wait(30)
    log(f"{backend}: profile in {OUT / f'profile-{backend}.txt'} (and .svg)")
    print(summarize_profile(OUT / f"profile-{backend}.txt"))


def summarize_profile(path: Path) -> str:
    """Where a worker's samples went, from py-spy's raw output: each sample counts once,
    in the first part (in this order) that its stack passes through."""
    parts = [
        ("API key lookup (authentication)", ("find_api_key", "TokenAuthentication")),
        ("group lookup (find_group / get_or_create)", ("find_group", "get_or_create (")),
        ("request validation (serializer)", ("is_valid",)),
        ("response body (serializer, token unsealing)", ("Serializer.data",)),
        ("request body parsing (JSON)", ("Request._parse",)),
        ("rest of DRF's dispatch and the view", ("APIView.dispatch",)),
        ("Django: handler, middleware, signals", ("WSGIHandler.__call__",)),
        ("gunicorn: HTTP parsing, socket reads and writes", ("",)),
    ]
    counts = dict.fromkeys([name for name, _ in parts], 0)
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        total += int(count)
        for name, needles in parts:
            if any(needle in stack for needle in needles):
                counts[name] += int(count)
                break
    lines = [f"  {n * 100 / max(total, 1):5.1f}%  {name}" for name, n in counts.items()]
    return f"{path.name}: {total} samples\n" + "\n".join(lines)


# --- output ----------------------------------------------------------------------------


def table_rows(results: Results, backends: list[str]) -> list[list[str]]:
    rows = []
    for backend in backends:
        base = results.median(backend, "get", "baseline1", "rps")
        for key in SCENARIO_ORDER:
            label = next(s.label for s in SCENARIOS if s.key == key)
            for impl in IMPLS:
                rps = results.median(backend, key, impl, "rps")
                if rps is None:
                    continue
                p50 = results.median(backend, key, impl, "p50_us") / 1000
                p99 = results.median(backend, key, impl, "p99_us") / 1000
                rounds = len(results.runs[(backend, key, impl)])
                one_connection = next(x for x in SCENARIOS if x.key == key).connections == 1
                ratio = f"{rps / base:.2f}x" if base and not one_connection else "-"
                rows.append(
                    [
                        backend,
                        label,
                        IMPL_LABELS[impl],
                        f"{rps:,.0f}",
                        f"{p50:.2f}",
                        f"{p99:.2f}",
                        ratio,
                        str(rounds),
                    ]
                )
    return rows


HEADER = [
    "database",
    "scenario",
    "implementation",
    "req/s",
    "p50 ms",
    "p99 ms",
    "req/s vs (1)",
    "rounds",
]


def format_table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(HEADER, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def markdown_table(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def targets(
    results: Results, backends: list[str], args_connections: int = 8
) -> list[tuple[str, str, bool]]:
    """(target, measured, met) for each target of issue 5 that the run measures."""
    out = []
    for b in backends:
        m = lambda key, impl, metric="rps", b=b: results.median(b, key, impl, metric)  # noqa: E731
        base1, base2, ours = m("get", "baseline1"), m("get", "baseline2"), m("get", "usergroups")
        if base1 and ours:
            out.append(
                (f"{b}: get >= 0.8x baseline (1)", f"{ours / base1:.2f}x", ours >= 0.8 * base1)
            )
        if base2 and ours:
            out.append((f"{b}: get >= 2x baseline (2)", f"{ours / base2:.2f}x", ours >= 2 * base2))
        create = m("create", "usergroups")
        if base1 and create:
            out.append(
                (
                    f"{b}: create >= 0.4x baseline (1)",
                    f"{create / base1:.2f}x",
                    create >= 0.4 * base1,
                )
            )
        rot, get1c = m("rotate", "usergroups", "p50_us"), m("get_1c", "usergroups", "p50_us")
        if rot and get1c:
            out.append(
                (
                    f"{b}: rotation p50 <= 2x get p50 (both 1 connection)",
                    f"{rot / 1000:.2f} ms vs {get1c / 1000:.2f} ms = {rot / get1c:.2f}x",
                    rot <= 2 * get1c,
                )
            )
        get8 = m("get", "usergroups", "p50_us")
        if rot and get8:
            out.append(
                (
                    f"{b}: rotation p50 <= 2x get p50 (get at {args_connections} connections)",
                    f"{rot / 1000:.2f} ms vs {get8 / 1000:.2f} ms = {rot / get8:.2f}x",
                    rot <= 2 * get8,
                )
            )
        big = m("get_1m", "usergroups", "p50_us")
        if big and get8:
            out.append(
                (
                    f"{b}: get p50 at 1M groups <= 1.2x at 1k",
                    f"{big / 1000:.2f} ms vs {get8 / 1000:.2f} ms = {big / get8:.2f}x",
                    big <= 1.2 * get8,
                )
            )
    if results.rss:
        workers = results.rss["workers"]
        worst = max(w["rss_end_kib"] / w["rss_1k_kib"] for w in workers)
        out.append(
            (
                f"{results.rss['backend']}: RSS of each worker after "
                f"{min(w['served_end'] for w in workers):,}+ requests <= 1.1x its RSS after "
                f"{min(w['served_1k'] for w in workers):,}+",
                f"{worst:.3f}x (worst worker)",
                worst <= 1.10,
            )
        )
    return out


def chart(results: Results, backends: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(backends), 2, figsize=(14, 4.2 * len(backends)), squeeze=False)
    colors = {"usergroups": "#2b7bba", "baseline1": "#9a9a9a", "baseline2": "#e07b39"}
    for row, backend in enumerate(backends):
        ax_rps, ax_lat = axes[row]
        keys = [k for k in SCENARIO_ORDER if any((backend, k, i) in results.runs for i in IMPLS)]
        labels = [next(s.label for s in SCENARIOS if s.key == k) for k in keys]
        width = 0.27
        for offset, impl in enumerate(IMPLS):
            xs, rps, p50, p99 = [], [], [], []
            for i, key in enumerate(keys):
                value = results.median(backend, key, impl, "rps")
                if value is None:
                    continue
                xs.append(i + (offset - 1) * width)
                rps.append(value)
                p50.append(results.median(backend, key, impl, "p50_us") / 1000)
                p99.append(results.median(backend, key, impl, "p99_us") / 1000)
            ax_rps.bar(xs, rps, width, label=IMPL_LABELS[impl], color=colors[impl])
            ax_lat.bar(xs, p50, width, label=f"{IMPL_LABELS[impl]} p50", color=colors[impl])
            ax_lat.scatter(xs, p99, marker="_", s=200, color="black", zorder=3)
        base = results.median(backend, "get", "baseline1", "rps")
        if base:
            ax_rps.axhline(0.8 * base, color="#2b7bba", linestyle=":", linewidth=1)
        for ax, title in (
            (ax_rps, f"{backend}: requests/s (dotted: 0.8x baseline (1))"),
            (ax_lat, f"{backend}: latency p50 (bars) and p99 (ticks), ms"),
        ):
            ax.set_xticks(range(len(keys)), [x.replace(", ", ",\n") for x in labels], fontsize=8)
            ax.set_title(title, fontsize=10)
            ax.grid(axis="y", alpha=0.3)
        ax_lat.set_yscale("log")
        ax_rps.legend(fontsize=8)
    fig.suptitle(
        "django-usergroups vs DRF baselines: gunicorn 2 sync workers, wrk on loopback, "
        "medians of alternating rounds",
        fontsize=11,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_results(results: Results, backends: list[str], args, elapsed: float, loads: tuple) -> str:
    rows = table_rows(results, backends)
    checks = targets(results, backends, args.connections)
    lines = [
        MARK_BEGIN,
        "",
        f"Run of {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z} on {platform.node()} "
        f"({os.cpu_count()} cores, Python {platform.python_version()}), "
        f"{elapsed / 60:.1f} minutes.",
        "",
        "Command: `"
        + (f"make bench BENCH_ARGS={shlex.quote(args.raw)}" if args.raw else "make bench")
        + "`, which runs `"
        + shlex.join([".venv/bin/python", "-m", "bench.run", *sys.argv[1:]])
        + "`",
        "",
        f"Settings: gunicorn {args.workers} sync workers; wrk {args.threads} threads, "
        f"{args.connections} connections, {args.duration} s per run ({args.short_duration} s for "
        f"1-connection runs); {args.rounds} rounds, alternating implementations and scenarios "
        "(order reversed every other round); medians. Load average (1 min) at the start "
        f"{loads[0]:.2f}, before the rounds {loads[1]:.2f}, at the end {loads[2]:.2f}.",
        "",
        markdown_table(rows),
        "",
        "Targets (issue 5):",
        "",
    ]
    lines += [f"- {'met' if ok else 'MISSED'}: {name}: {value}" for name, value, ok in checks]
    if results.rss:
        lines += ["", f"Memory ({results.rss['backend']}, get, RSS of each gunicorn worker):", ""]
        for w in results.rss["workers"]:
            lines.append(
                f"- worker {w['pid']}: {w['rss_1k_kib'] / 1024:.1f} MiB after it served "
                f"{w['served_1k']:,} requests ({results.rss['requests_first']:,} to the server), "
                f"{w['rss_end_kib'] / 1024:.1f} MiB after {w['served_end']:,} "
                f"({results.rss['requests_total']:,} to the server): "
                f"{w['rss_end_kib'] / w['rss_1k_kib']:.3f}x"
            )
    if results.notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in results.notes]
    lines += ["", "![results](results.png)", "", MARK_END]
    block = "\n".join(lines)
    path = BENCH / "RESULTS.md"
    text = path.read_text() if path.exists() else "# Benchmark results\n\n" + MARK_BEGIN + MARK_END
    if MARK_BEGIN in text and MARK_END in text:
        head, rest = text.split(MARK_BEGIN, 1)
        text = head + block + rest.split(MARK_END, 1)[1]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)
    return (
        format_table(rows)
        + "\n\n"
        + "\n".join(
            f"{'met   ' if ok else 'MISSED'}  {name}: {value}" for name, value, ok in checks
        )
    )


def main() -> None:
    # ``timeout`` and CI stop with SIGTERM: unwind, so that the servers are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=4, help="seconds per run")
    parser.add_argument("--short-duration", type=float, default=3, help="1-connection runs")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--big-rows", type=int, default=1_000_000)
    parser.add_argument(
        "--rss-requests", type=int, default=100_000, help="per worker; 0 skips the memory mode"
    )
    parser.add_argument("--rss-backend", default="sqlite")
    parser.add_argument("--reuse", action="store_true", help="keep seeded data sets")
    parser.add_argument("--profile", action="store_true", help="py-spy the get path too")
    parser.add_argument("--no-write", action="store_true", help="leave RESULTS.md alone")
    args = parser.parse_args()
    args.raw = shlex.join(sys.argv[1:])
    started = time.monotonic()
    load_start = load1()
    if not shutil.which("wrk"):
        sys.exit("wrk is not installed (apt-get install wrk; `make bench` does it)")
    OUT.mkdir(parents=True, exist_ok=True)
    backends = [b for b in args.backends.split(",") if b]
    if "postgres" in backends and not pg_available():
        backends.remove("postgres")
    sizes = {"1k": 1000, "1m": args.big_rows, "scratch": 1000}
    log(f"load average {load_start:.2f}; preparing data sets for {', '.join(backends)}")
    infos: dict = {b: {} for b in backends}
    # The two big seeds run side by side (one per core), then the small ones.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        jobs = {
            (b, ds): pool.submit(prepare, b, ds, sizes[ds], args.reuse)
            for ds in ("1m", "1k", "scratch")
            for b in backends
        }
        for (b, ds), job in jobs.items():
            infos[b][ds] = job.result()
    load_rounds = load1()
    results = Results()
    body = get_body()
    for backend in backends:
        measure_backend(backend, infos[backend], args, results, body)
    if args.rss_requests:
        rss_backend = args.rss_backend if args.rss_backend in backends else backends[0]
        log(f"memory mode on {rss_backend}: {args.rss_requests:,} requests per worker")
        measure_rss(rss_backend, infos[rss_backend]["1k"], args, results, body)
    elapsed = time.monotonic() - started
    loads = (load_start, load_rounds, load1())
    if args.no_write:
        print(format_table(table_rows(results, backends)))
        return
    chart(results, backends, BENCH / "results.png")
    (OUT / "results.json").write_text(
        json.dumps(
            {"runs": {"|".join(k): v for k, v in results.runs.items()}, "rss": results.rss},
            indent=1,
        )
    )
    summary = write_results(results, backends, args, elapsed, loads)
    print()
    print(summary)
    print(f"\nbench/RESULTS.md and bench/results.png written; {elapsed / 60:.1f} minutes in all.")


if __name__ == "__main__":
    main()

"""The scale step of ``make bench`` (issue 32, CONTRACT section 9a): what the read model
costs the database as a site grows, and how much of a verification load it keeps off it.

PostgreSQL only, in a database of its own (BENCH_PG_URL's name with ``_scale``), made
anew, migrated and seeded by bench/datasets.py, dropped at the end; ``bench.site`` under
gunicorn (bench/driving.py's ``Server``) on loopback, wrk as the load:

1. Idle cost, for each count of ``--workers``: wrk until every worker listens
   (``pg_stat_activity`` shows as many ``usergroups-listen`` sessions and a beat), then
   nothing: the database's commits a second (``pg_stat_database.xact_commit``, read from
   the ``postgres`` database, so that reading adds none; every session ended at the edges
   of the intervals, so that the listening ones' are counted: see ``measure_idle``), and,
   over ``--idle`` seconds, the CPU of its listening and beating server processes and of
   the workers (utime + stime in /proc) and how often each listening one is woken. A count
   the server has no connections free for (two a worker and the beat) is skipped, and the
   report says so.
2. ``--live-tokens`` tokens of one group, each naming a person of its own, verified by wrk
   (bench/lua/tokens.lua) over 2 workers, ``--seconds`` once warm, in four phases: no
   writes; new persons of the same workspace minted through the API at ``--churn-rate`` a
   second; the same in another workspace; no writes beside ``--burners`` CPU-bound
   processes. Reads per verification: the scans of the denylist table, which only the
   verification statement reads (``pg_stat_user_tables``), over the 200s wrk counted.
3. Memory: ``--memory-tokens`` tokens of a group with 64 KiB of properties, each verified
   once by one worker: its resident memory before and after, against the default
   ``READ_MODEL_MAX_BYTES``; then a second pass over the last of them, from memory.

    python -m bench.scale [--workers 2,8,32,64] [--idle 40] [--seconds 8] ...
    python -m bench.scale --smoke              # every step, briefly; writes nothing

``make bench`` runs it after the rounds (``--only scale``: it alone, writing nothing).
"""

import argparse
import contextlib
import dataclasses
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bench import OUT, log
from bench.datasets import PG_URL, database_name, pg_available, pg_connect, prepare, server_env
from bench.driving import Server
from bench.reporting import mib, scale_summary, write_scale_results
from bench.scenarios import (
    RUNS,
    SCALE,
    SCALE_SMOKE,
    ChurnRow,
    IdleRow,
    MemoryRow,
    Plan,
    Run,
    ScaleResults,
)
from bench.workload import TARGET_ID
from tests.support.deployment import manage
from tests.support.http import call_api, exchange
from tests.support.postgres import (
    drop_database,
    listening_backends,
    recreate_database,
    terminate_backends,
)
from usergroups.read_model.listening import BEAT_APPLICATION_NAME

MINT = "/api/user/embed-token"
VERIFY = "/bench/embed"
#: RevokedEmbedToken's table: only the verification statement reads it.
DENYLIST = "usergroups_revokedembedtoken"
MAX_PROPERTIES_BYTES = 64 * 1024  # usergroups/conf.py's default
# The warm-up of the idle step: a verification on each worker starts its listener.
WARM_RUN = Run("verify", "usergroups", VERIFY, "plain_get", "embed_token", "usergroups")
MANY_TOKENS = Run("verify", "usergroups", VERIFY, "tokens", "embed_token", "usergroups")
# A view whose every request queries (DRF's authtoken): PostgreSQL hands a busy backend's
# counters to the statistics views at most once a second, and an idle one's last ones up
# to 10 s later; a query made a second after the load hands them over at once.
NUDGE = next(run for run in RUNS if run.impl == "authtoken")
SETTLE = 2.0  # seconds after the idle step's warm-up: its writes heard, the workers idle
WARM_USES = 10  # uses of each live token, at least, before a measured run


def site_args(workers: int) -> argparse.Namespace:
    """What bench/driving.py's ``Server`` reads of the options: ``make bench``'s own."""
    return argparse.Namespace(workers=workers, pg_prepare_threshold=None, threads=2, connections=8)


# The database and its counters.


@contextlib.contextmanager
def scale_database() -> Iterator[tuple[str, str]]:
    """A new database beside ``BENCH_PG_URL``'s: its URL and name; dropped after."""
    name = f"{database_name(PG_URL)}_{SCALE}"
    url = on_server(name)
    recreate_database(name, admin_url())
    try:
        yield url, name
    finally:
        drop_database(name, admin_url())


def on_server(database: str) -> str:
    """The URL of ``database`` on ``BENCH_PG_URL``'s server."""
    scheme, netloc, _path, query, fragment = urlsplit(PG_URL)
    return urlunsplit((scheme, netloc, f"/{database}", query, fragment))


def admin_url() -> str:
    return on_server("postgres")


def free_connections(admin: Any) -> tuple[int, int]:
    """Connections the server can still give ordinary users, and its ``max_connections``."""
    most = int(admin.execute("SHOW max_connections").fetchone()[0])
    reserved = int(admin.execute("SHOW superuser_reserved_connections").fetchone()[0])
    used = admin.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
    ).fetchone()[0]
    return most - reserved - used, most


def commits(admin: Any, name: str) -> int:
    row = admin.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = %s", (name,))
    count: int = row.fetchone()[0]
    return count


def cpu_seconds(pids: list[int]) -> dict[int, float]:
    """utime + stime of each process (all its threads), in seconds; the gone left out."""
    ticks, used = os.sysconf("SC_CLK_TCK"), {}
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()  # comm may hold spaces
        used[pid] = (int(fields[11]) + int(fields[12])) / ticks
    return used


def process_status(pid: int) -> dict[str, int]:
    """The numbers of /proc/<pid>/status (VmRSS in kB, voluntary_ctxt_switches...)."""
    figures = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        label, _, value = line.partition(":")
        if value.split() and value.split()[0].isdigit():
            figures[label] = int(value.split()[0])
    return figures


def wakes(pids: list[int]) -> dict[int, float]:
    """Each process's voluntary context switches: how often it went to sleep, so woke."""
    counted = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            counted[pid] = float(process_status(pid)["voluntary_ctxt_switches"])
    return counted


def share_of_a_core(
    before: dict[int, float], after: dict[int, float], seconds: float, pids: list[int]
) -> float:
    """The CPU ``pids`` used between the two readings, in % of one core."""
    used = sum(after[pid] - before[pid] for pid in pids if pid in before and pid in after)
    return 100 * used / seconds


def denylist_reads(server: Server, site: argparse.Namespace, database: Any) -> int:
    """The denylist's scans so far, every worker's counters handed over first (``NUDGE``)."""
    time.sleep(1.1)
    server.wrk(NUDGE, site, 1)
    row = database.execute(
        "SELECT coalesce(idx_scan, 0) + seq_scan FROM pg_stat_user_tables WHERE relname = %s",
        (DENYLIST,),
    ).fetchone()
    count: int = row[0]
    return count


# 1. The idle cost.


def measure_idle(
    workers: int, secrets: dict[str, str], url: str, name: str, plan: Plan, results: ScaleResults
) -> None:
    """The idle site's commits a second, exactly: a listening session commits a
    transaction each time a notification wakes it (PostgreSQL reads its queue in one), but
    hands its counters to ``pg_stat_database`` only when it runs a statement of its own or
    ends. So every session of the database is ended (``cut``) at the edges of two idle
    intervals, a short and a long one (the listeners come back by themselves); the rate is
    the difference of their commits over the difference of their lengths, which takes
    away the coming back, the same in both. CPU and wakes: over the long one, once back."""
    with pg_connect("postgres") as admin:
        free, most = free_connections(admin)
        if free < 2 * workers + 1:
            note = (
                f"{workers} workers: not measured; they need {2 * workers + 1} connections (a "
                f"listening and a Django one each, and the beat), the server had {free} free "
                f"(max_connections {most}): raise max_connections for that row"
            )
            log(note)
            results.notes.append(note)
            return
        site = site_args(workers)
        with Server("postgres", secrets, site, pg_url=url, name=f"{SCALE}-{workers}") as server:
            warm_every_worker(server, site, workers, name)
            time.sleep(SETTLE)
            first = cut(admin, name)
            listening_again(workers, name, server)
            time.sleep(SETTLE)
            second = cut(admin, name)
            listening, beating = listening_again(workers, name, server)
            time.sleep(SETTLE)
            pids = {"listen": listening, "beat": beating, "app": server.gunicorn.worker_pids()}
            began = time.monotonic()
            cpu_before, wakes_before = cpu_seconds(sum(pids.values(), [])), wakes(listening)
            time.sleep(plan.idle)
            seconds = time.monotonic() - began
            cpu_after, wakes_after = cpu_seconds(sum(pids.values(), [])), wakes(listening)
            still = len(listening_backends(name, admin_url=admin_url()))
            third = cut(admin, name)
    commits_long, commits_short = third[1] - second[1], second[1] - first[1]
    row = IdleRow(
        workers,
        still,
        (commits_long - commits_short) / ((third[0] - second[0]) - (second[0] - first[0])),
        share_of_a_core(cpu_before, cpu_after, seconds, pids["listen"] + pids["beat"]),
        share_of_a_core(cpu_before, cpu_after, seconds, pids["beat"]),
        share_of_a_core(cpu_before, cpu_after, seconds, pids["app"]),
        sum(wakes_after[pid] - wakes_before[pid] for pid in wakes_after if pid in wakes_before)
        / max(1, len(wakes_after))
        / seconds,
    )
    results.idle.append(row)
    log(
        f"idle, {workers} workers ({still} listening): {row.commits:.1f} commits/s; listening"
        f" and beating server processes {row.listen_cpu:.1f}% of a core (the beat"
        f" {row.beat_cpu:.1f}%), each listening one woken {row.wakes:.1f} times/s; the"
        f" workers {row.app_cpu:.1f}%"
    )


def cut(admin: Any, name: str) -> tuple[float, int]:
    """End every session of ``name``: the moment, and its commits once each has ended
    (and so handed over its counters)."""
    started = admin.execute("SELECT now()").fetchone()[0]
    terminate_backends(name, admin_url())
    deadline = time.monotonic() + 10
    while admin.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND backend_start <= %s",
        (name, started),
    ).fetchone()[0]:
        if time.monotonic() > deadline:
            raise RuntimeError(f"sessions of {name} outlived pg_terminate_backend")
        time.sleep(0.02)
    time.sleep(0.1)  # an ended session's counters are handed over as its process exits
    return time.monotonic(), commits(admin, name)


def listening_now(name: str) -> tuple[list[int], list[int]]:
    """The server processes of ``name`` that listen, and the one that beats."""
    listening = listening_backends(name, admin_url=admin_url())
    return listening, listening_backends(name, BEAT_APPLICATION_NAME, admin_url())


def listening_again(workers: int, name: str, server: Server) -> tuple[list[int], list[int]]:
    """Once every worker listens again after a ``cut`` (by itself), and one beats (its
    worker beats from then on, idle or not, as a site's beater does)."""
    deadline = time.monotonic() + 30
    while len(listening := listening_backends(name, admin_url=admin_url())) < workers:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(listening)} of {workers} workers listen again after a cut")
        time.sleep(0.05)
    return listening, server.until_someone_beats(name, admin_url())


def warm_every_worker(
    server: Server, site: argparse.Namespace, workers: int, name: str
) -> tuple[list[int], list[int]]:
    """wrk on every worker until each listens and one beats; the server processes' pids."""
    run = dataclasses.replace(WARM_RUN, connections=max(site.connections, workers))
    deadline = time.monotonic() + 60 + workers
    while True:
        server.wrk(run, site, 1)
        listening, beating = listening_now(name)
        if len(listening) >= workers and beating:
            return listening, beating
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"{len(listening)} of {workers} workers listen, {len(beating)} beat; "
                f"see {server.log_path}"
            )


# 2. Verifications that read the database, under churn and CPU pressure.


class Churn:
    """New persons of ``api_key``'s workspace, each minted a token of ``group`` through the
    API (which writes the person), ``rate`` a second, in a thread, until the block ends."""

    def __init__(self, base_url: str, api_key: str, group: str, rate: float, prefix: str) -> None:
        self.base_url, self.api_key, self.group = base_url, api_key, group
        self.rate, self.prefix = rate, prefix
        self.minted = self.failed = 0
        self.started = self.elapsed = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "Churn":
        self.started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.elapsed = time.monotonic() - self.started

    def _run(self) -> None:
        number = 0
        while not self._stop.wait(max(0.0, self.started + number / self.rate - time.monotonic())):
            body = {"user_group_id": self.group, "end_user": {"id": f"{self.prefix}-{number}"}}
            number += 1
            try:
                status, _answer = call_api(self.base_url, self.api_key, "POST", body, path=MINT)
            except OSError:
                status = 0
            if status == 200:
                self.minted += 1
            else:
                self.failed += 1


@contextlib.contextmanager
def cpu_burners(count: int) -> Iterator[None]:
    """``count`` CPU-bound processes beside the site, killed after the block."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait(timeout=10)


def mint_tokens(
    base_url: str, api_key: str, bodies: list[dict[str, Any]], clients: int = 8
) -> list[str]:
    """An embed token for each body, minted through the API by ``clients`` at once."""

    def mint(body: dict[str, Any]) -> str:
        status, answer = call_api(base_url, api_key, "POST", body, path=MINT)
        if status != 200:
            raise RuntimeError(f"minting {body}: {status} {answer}")
        token: str = answer["embed_token"]
        return token

    with ThreadPoolExecutor(clients) as pool:
        return list(pool.map(mint, bodies))


def measure_churn(
    server: Server, keys: dict[str, str], name: str, plan: Plan, results: ScaleResults
) -> None:
    """The four phases on ``server`` (2 workers); ``keys``: an API key of the tokens'
    workspace (``same``) and of another (``other``)."""
    base_url = server.gunicorn.base_url
    other_group = f"{SCALE}-other-workspace"
    status, answer = call_api(base_url, keys["other"], "GET", {"user_group_id": other_group})
    if status not in (200, 201):
        raise RuntimeError(f"the other workspace's group: {status} {answer}")
    phases = [
        ("no writes", None, None, 0),
        ("new persons of the same workspace", keys["same"], TARGET_ID, 0),
        ("new persons of another workspace", keys["other"], other_group, 0),
        (f"no writes, {plan.burners} CPU-bound processes beside", None, None, plan.burners),
    ]
    bodies = [
        {"user_group_id": TARGET_ID, "end_user": {"id": f"{SCALE}-person-{number:04d}"}}
        for number in range(plan.live_tokens)
    ]
    tokens_file = OUT / f"{SCALE}-live-tokens.txt"
    tokens_file.write_text("\n".join(mint_tokens(base_url, keys["same"], bodies)) + "\n")
    try:
        with pg_connect(name) as database:
            load = Load(server, database, plan, {"BENCH_TOKENS": str(tokens_file)})
            for number, (phase, key, group, burners) in enumerate(phases):
                churn = None
                if key is not None and group is not None:
                    churn = Churn(base_url, key, group, plan.churn_rate, f"{SCALE}-new-{number}")
                row = load.measure(phase, churn, burners)
                results.churn.append(row)
                if row.errors:
                    results.notes.append(f"{phase}: {row.errors} errors or refusals")
                if churn is not None and churn.failed:
                    results.notes.append(f"{phase}: {churn.failed} mints failed")
    finally:
        tokens_file.unlink()


class Load:
    """The live tokens verified by wrk on 2 workers; the denylist's reads meanwhile."""

    def __init__(
        self, server: Server, database: Any, plan: Plan, tokens_env: dict[str, str]
    ) -> None:
        self.server, self.database, self.plan = server, database, plan
        self.site, self.tokens_env = site_args(2), tokens_env

    def measure(self, phase: str, churn: Churn | None, burners: int) -> ChurnRow:
        """One phase: warm, then measured, with ``churn`` minting and ``burners`` beside."""
        with contextlib.ExitStack() as stack:
            if churn is not None:
                stack.enter_context(churn)
            if burners:
                stack.enter_context(cpu_burners(burners))
            self.warm_up()
            before = self.denylist_reads()
            result = self.server.wrk(MANY_TOKENS, self.site, self.plan.seconds, self.tokens_env)
            after = self.denylist_reads()
        row = ChurnRow(
            phase,
            result["rps"],
            result["requests"] - result["status_errors"],  # answered 200
            result["errors"],
            after - before,
            churn.minted / churn.elapsed if churn is not None else None,
        )
        log(
            f"{phase}: {row.rps:,.0f} verifications/s, {row.reads} reads of {row.ok} "
            f"verifications: {row.per_verification:.3f} each"
            + (f"; {row.minted:.1f} persons minted/s" if row.minted is not None else "")
            + (f"; {row.errors} errors or refusals" if row.errors else "")
        )
        return row

    def warm_up(self) -> None:
        """``plan.warm`` seconds of the load, and more until each token was used
        ``WARM_USES`` times (on a machine slower than the seconds assume), at most a minute."""
        deadline, uses = time.monotonic() + 60, 0
        while uses < WARM_USES * self.plan.live_tokens and time.monotonic() < deadline:
            run = self.server.wrk(MANY_TOKENS, self.site, self.plan.warm, self.tokens_env)
            uses += run["requests"]

    def denylist_reads(self) -> int:
        return denylist_reads(self.server, self.site, self.database)


# 3. Memory.


def large_properties() -> dict[str, list[str]]:
    """Properties as large as the default limit allows (compact JSON, as it is measured)."""
    properties: dict[str, list[str]] = {}
    while True:
        more = {**properties, f"region_{len(properties):04d}": ["x" * 60] * 8}
        if len(json.dumps(more, separators=(",", ":")).encode()) > MAX_PROPERTIES_BYTES:
            return properties
        properties = more


def verify_each(base_url: str, tokens: list[str], clients: int) -> Counter[int]:
    """Each token used once on the verification view: how many answers of each status."""

    def use(token: str) -> int:
        return exchange(base_url, "GET", None, f"Embed {token}", path=VERIFY)[0]

    with ThreadPoolExecutor(clients) as pool:
        return Counter(pool.map(use, tokens))


def resident(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (the peak) of a process, in bytes."""
    status = process_status(pid)
    return {label: status[label] * 1024 for label in ("VmRSS", "VmHWM")}


def mint_memory_tokens(server: Server, api_key: str, plan: Plan) -> tuple[list[str], int]:
    """The memory step's tokens (on the 2-worker server, the quicker), and the bytes of
    their group's properties."""
    properties = large_properties()
    group = f"{SCALE}-large-properties"
    body = {"user_group_id": group, "properties": properties}
    status, answer = call_api(server.gunicorn.base_url, api_key, "GET", body)
    if status not in (200, 201):
        raise RuntimeError(f"the group with large properties: {status} {answer}")
    started = time.monotonic()
    bodies = [{"user_group_id": group}] * plan.memory_tokens
    tokens = mint_tokens(server.gunicorn.base_url, api_key, bodies)
    log(f"memory: {len(tokens):,} tokens minted in {time.monotonic() - started:.0f} s")
    return tokens, len(json.dumps(properties, separators=(",", ":")).encode())


def measure_memory(
    server: Server, tokens: list[str], properties_bytes: int, name: str, results: ScaleResults
) -> None:
    """Each token once on one worker: its resident memory after the first hundred (its
    own start, the group's record) and after the rest; then the last thousand again."""
    site, base_url = site_args(1), server.gunicorn.base_url
    (pid,) = server.gunicorn.worker_pids()
    first, rest = tokens[:100], tokens[100:]
    served = verify_each(base_url, first, 1)
    before = resident(pid)["VmRSS"]
    served += verify_each(base_url, rest, 4)
    time.sleep(0.5)  # the last answers' memory settled
    after = resident(pid)
    again = tokens[-1000:]
    with pg_connect(name) as database:
        reads_before = denylist_reads(server, site, database)
        served_again = verify_each(base_url, again, 4)
        reads_after = denylist_reads(server, site, database)
    if set(served) != {200} or set(served_again) != {200}:
        results.notes.append(f"memory: answers {dict(served)}, again {dict(served_again)}")
    row = MemoryRow(
        len(tokens),
        properties_bytes,
        before,
        after["VmRSS"],
        after["VmHWM"],
        served[200],
        served_again[200],
        reads_after - reads_before,
    )
    results.memory = row
    log(
        f"memory: {row.tokens:,} tokens verified once: resident {mib(row.rss_before)} -> "
        f"{mib(row.rss_after)} MiB (+{mib(row.growth)}, peak {mib(row.peak)}); the last "
        f"{len(again):,} again: {row.again_reads} reads"
    )


# The step.


def measure_scale(plan: Plan) -> ScaleResults:
    """Every part of the step, in its own database; what they measured."""
    results = ScaleResults(plan)
    started, load_start = time.monotonic(), os.getloadavg()[0]
    OUT.mkdir(parents=True, exist_ok=True)
    with scale_database() as (url, name):
        secrets = prepare("postgres", 1, pg_url=url)
        other = manage(
            server_env("postgres", pg_url=url),
            *("create_api_key", "--workspace", f"{SCALE}-other", "--name", SCALE),
        )
        keys = {"same": secrets["api_key"], "other": other.strip().splitlines()[-1]}
        for workers in plan.workers:
            measure_idle(workers, secrets, url, name, plan, results)
        with Server("postgres", secrets, site_args(2), pg_url=url, name=f"{SCALE}-2") as server:
            measure_churn(server, keys, name, plan, results)
            tokens, properties_bytes = mint_memory_tokens(server, keys["same"], plan)
        with Server("postgres", secrets, site_args(1), pg_url=url, name=f"{SCALE}-1") as server:
            measure_memory(server, tokens, properties_bytes, name, results)
    results.elapsed, results.loads = time.monotonic() - started, (load_start, os.getloadavg()[0])
    return results


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description="the read model at scale (issue 32)")
    defaults = Plan()
    parser.add_argument(
        "--workers",
        type=lambda text: tuple(int(n) for n in text.split(",") if n),
        default=defaults.workers,
        help="the worker counts of the idle step, e.g. 2,8",
    )
    parser.add_argument("--idle", type=float, default=defaults.idle, help="seconds idle")
    parser.add_argument("--warm", type=float, default=defaults.warm)
    parser.add_argument("--seconds", type=float, default=defaults.seconds, help="of each run")
    parser.add_argument("--live-tokens", type=int, default=defaults.live_tokens)
    parser.add_argument("--churn-rate", type=float, default=defaults.churn_rate)
    parser.add_argument("--burners", type=int, default=defaults.burners)
    parser.add_argument("--memory-tokens", type=int, default=defaults.memory_tokens)
    parser.add_argument("--no-write", action="store_true", help="leave RESULTS.md alone")
    parser.add_argument("--smoke", action="store_true", help="every part, briefly; writes nothing")
    args = parser.parse_args()
    fields = (field.name for field in dataclasses.fields(Plan))  # an option each
    plan = SCALE_SMOKE if args.smoke else Plan(**{name: getattr(args, name) for name in fields})
    if not pg_available():
        sys.exit("the scale step needs PostgreSQL")
    results = measure_scale(plan)
    print("\n" + scale_summary(results))
    if not (args.no_write or args.smoke):
        write_scale_results(results, shlex.join(["python", "-m", "bench.scale", *sys.argv[1:]]))
        log(f"bench/RESULTS.md written; {results.elapsed / 60:.1f} minutes in all")


if __name__ == "__main__":
    main()

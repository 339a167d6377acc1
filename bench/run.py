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
    python -m bench.run --smoke    # every step, briefly: does it run end to end?

This module is the command: its options and the order of the steps. The steps, one job
a module: bench/datasets.py (migrate and seed through bench/seed.py), bench/driving.py
(servers and wrk runs), bench/profiling.py (``--profile``), bench/reporting.py (the table,
the targets, RESULTS.md), bench/charting.py (results.png), bench/moves.py (a move of a
group with 1,000 descendants, timed); bench/scenarios.py says what
is measured.
"""

import argparse
import concurrent.futures
import json
import os
import shlex
import shutil
import signal
import sys
import time
from typing import Any

from bench import BENCH, OUT, log
from bench.charting import chart
from bench.datasets import pg_available, prepare, server_env
from bench.driving import get_body, measure_backend, measure_rss
from bench.reporting import format_table, pool_comparison, table_rows, targets, write_results
from bench.scenarios import Results, scenarios_for
from tests.support.deployment import run_python


def load1() -> float:
    return os.getloadavg()[0]


def time_moves(backend: str) -> str:
    """bench/moves.py on the backend's ``scratch`` data set, as a line of the report."""
    moved = json.loads(
        run_python(server_env(backend, "scratch"), "-m", "bench.moves").strip().splitlines()[-1]
    )
    return (
        f"{backend}: a move of a group with {moved['descendants']:,} descendants (PUT's "
        f"service call, in process): median {moved['median_ms']} ms, slowest "
        f"{moved['max_ms']} ms of {moved['moves']} moves"
    )


def main() -> None:
    # ``timeout`` and CI stop with SIGTERM: unwind, so that the servers are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
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
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a check that every step runs (1 round of 1 s runs, 2,000 groups for 1M, "
        "2,000 requests per worker in the memory mode); writes nothing",
    )
    parser.add_argument(
        "--only",
        type=lambda text: frozenset(filter(None, text.split(","))),
        default=frozenset(),
        help="scenario keys (bench/scenarios.py SCENARIO_ORDER), e.g. get,embed_verify: "
        "an A/B check of those alone; no moves, no memory mode, writes nothing",
    )
    args = parser.parse_args()
    if args.only:
        args.rss_requests, args.no_write = 0, True
    if args.smoke:
        args.rounds, args.duration, args.short_duration = 1, 1, 1
        args.big_rows, args.rss_requests, args.no_write = 2000, 2000, True
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
    needed = {s.dataset for b in backends for s in scenarios_for(b, args.only)}
    log(f"load average {load_start:.2f}; preparing data sets for {', '.join(backends)}")
    infos: dict[str, dict[str, dict[str, Any]]] = {b: {} for b in backends}
    # The two big seeds run side by side (one per core), then the small ones.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        jobs = {
            (b, ds): pool.submit(prepare, b, ds, sizes[ds], args.reuse)
            for ds in ("1m", "1k", "scratch")
            if ds in needed
            for b in backends
        }
        for (b, ds), job in jobs.items():
            infos[b][ds] = job.result()
    load_rounds = load1()
    results = Results()
    body = get_body()
    for backend in backends:
        measure_backend(backend, infos[backend], args, results, body)
        if not args.only:
            results.notes.append(time_moves(backend))
            log(results.notes[-1])
    if args.rss_requests:
        rss_backend = args.rss_backend if args.rss_backend in backends else backends[0]
        log(f"memory mode on {rss_backend}: {args.rss_requests:,} requests per worker")
        measure_rss(rss_backend, infos[rss_backend]["1k"], args, results, body)
    elapsed = time.monotonic() - started
    loads = (load_start, load_rounds, load1())
    if args.no_write:
        print(format_table(table_rows(results, backends)))
        for name, value, ok in targets(results, backends, args.connections):
            print(f"{'met   ' if ok else 'MISSED'}  {name}: {value}")
        print("\n".join(pool_comparison(results, backends)))
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

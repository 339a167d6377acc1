"""``make bench``: the command. Its options and the order of the steps; the design is
in bench/__init__.py.

    python -m bench.run [--rounds 3] [--duration 4] [--backends sqlite,postgres] ...
    python -m bench.run --smoke                  # every step, briefly; writes nothing
    python -m bench.run --only verify --profile verify   # one scenario, and its profile
    python -m bench.run --only scale             # the scale step alone (bench/scale.py)
"""

import argparse
import os
import shlex
import shutil
import signal
import sys
import time

from bench import OUT, log
from bench.datasets import pg_available, prepare
from bench.driving import measure_backend
from bench.reporting import command, scale_summary, summary, write_results, write_scale_results
from bench.scale import measure_scale
from bench.scenarios import (
    INSTRUMENTS,
    PROPAGATION,
    RUNS,
    SCALE,
    SCALE_SMOKE,
    WEBHOOKS,
    Plan,
    Results,
)

SCENARIOS = frozenset({run.key for run in RUNS})


def keys(text: str, known: frozenset[str] = SCENARIOS) -> frozenset[str]:
    chosen = frozenset(filter(None, text.split(",")))
    if unknown := chosen - known:
        raise argparse.ArgumentTypeError(f"no scenario {', '.join(sorted(unknown))}")
    return chosen


def main() -> None:
    # ``timeout`` and CI stop with SIGTERM: unwind, so that the servers are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description="django-usergroups against its peers")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=4, help="seconds per run")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--groups", type=int, default=1000, help="groups seeded")
    parser.add_argument(
        "--pg-prepare-threshold",
        type=int,
        default=None,
        help="PostgreSQL: psycopg's server-side binding with this prepare_threshold, for "
        "the whole site (DATABASES OPTIONS); default: Django's (none)",
    )
    parser.add_argument(
        "--only",
        type=lambda text: keys(text, SCENARIOS | {WEBHOOKS, PROPAGATION, INSTRUMENTS, SCALE}),
        default=frozenset(),
        help="scenarios (get, verify, mint, create, rotate, webhooks, propagation, instruments, "
        "scale), "
        "e.g. get,verify: an A/B check of those alone; writes nothing",
    )
    parser.add_argument(
        "--profile",
        type=keys,
        default=frozenset(),
        help="scenarios whose app run py-spy samples before the rounds (bench/out/profile-*)",
    )
    parser.add_argument(
        "--webhook-events",
        type=int,
        default=1000,
        help="mints in the webhook burst; the steady run makes half as many",
    )
    parser.add_argument("--no-write", action="store_true", help="leave RESULTS.md alone")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="does every step run? 1 round of 1 s runs, 50 groups, 100 webhook events, "
        "the scale step briefly at 2 workers; writes nothing",
    )
    args = parser.parse_args()
    if args.smoke:
        args.rounds, args.duration, args.groups, args.no_write = 1, 1, 50, True
        args.webhook_events = 100
    args.no_write = args.no_write or bool(args.only)
    args.raw = shlex.join(sys.argv[1:])
    if not shutil.which("wrk"):
        sys.exit("wrk is not installed (apt-get install wrk; `make bench` does it)")
    started, load_start = time.monotonic(), os.getloadavg()[0]
    OUT.mkdir(parents=True, exist_ok=True)
    backends = [b for b in args.backends.split(",") if b]
    if "postgres" in backends and not pg_available():
        backends.remove("postgres")  # and said so
    log(f"load average {load_start:.2f}; backends: {', '.join(backends)}")
    results = Results()
    rounds = not args.only or bool(args.only - {SCALE})  # the scale step seeds its own
    for backend in backends if rounds else []:
        measure_backend(backend, prepare(backend, args.groups), args, results)
    # PostgreSQL alone, in a database of its own, after the rounds.
    scale = None
    if "postgres" in backends and (not args.only or SCALE in args.only):
        scale = measure_scale(SCALE_SMOKE if args.smoke else Plan())
    if text := summary(results, backends):
        print("\n" + text)
    if scale is not None:
        print("\n" + scale_summary(scale))
    if not args.no_write:
        elapsed = time.monotonic() - started
        write_results(results, backends, args, elapsed, (load_start, os.getloadavg()[0]))
        if scale is not None:
            write_scale_results(scale, command(args))
        log(f"bench/RESULTS.md written; {elapsed / 60:.1f} minutes in all")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Fault test: load from several clients, then a worker SIGKILLed and the database
connections terminated. Afterwards nothing a client was told may be untrue.

Loopback only, bounded in time (about LOAD_SECONDS of load, a hard limit on the whole
run) and in clients. Runs example_project under gunicorn (3 sync workers, never
recycled: --max-requests 0) on its own PostgreSQL database, ``faults``, made anew.

Each client creates groups (ids unique to the run) and rotates each group's token in a
chain. A request whose outcome is unknown (connection error or 5xx) is retried until it
answers: get-or-create is idempotent, and a retried rotation tells whether the first
attempt committed (200: it had not; 404: it had, and the new token was never seen).
The load and its ledger are tests/support/load.py and ledger.py, which the cluster's fault
test (tests/cluster/test_faults.py) shares.

Checked from the database afterwards, through the Django ORM:
- every group a client was told about (a 200 on get-or-create) exists exactly once, and
  its stored digest is the digest of the last token its client got with a 200;
- so no rotation that answered 200 was lost, and no token rotated away is current;
- where a rotation's outcome stayed unknown, the current token is none rotated away;
- the server's log holds no API key or group token.
Prints what share of requests failed around each fault and what they answered; exits
non-zero if any invariant is violated.

    .venv/bin/python .ci/fault_test.py [--seconds 20] [--clients 6] [--tamper]

``--tamper`` proves the checks can fail: before checking, it undoes one rotation that
answered 200 and deletes one group a client was told about; the script must then exit 1.
"""

import argparse
import collections
import os
import random
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support import HOST  # noqa: E402
from tests.support.deployment import migrated_site  # noqa: E402
from tests.support.gunicorn import Gunicorn  # noqa: E402
from tests.support.ledger import FAULT_WINDOW, Fault, check_stored, summarize  # noqa: E402
from tests.support.load import MAX_RETRIES, REQUEST_TIMEOUT, LoadClient  # noqa: E402
from tests.support.postgres import (  # noqa: E402
    direct_url,
    recreate_database,
    terminate_backends,
)

DATABASE = "faults"
DATABASE_URL = direct_url(DATABASE)
WORKSPACE = "faults"
HARD_LIMIT = 120  # seconds for the whole script, whatever happens


def on_alarm(signum, frame):
    raise TimeoutError(f"the fault test ran over its limit of {HARD_LIMIT} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="load duration")
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--tamper", action="store_true", help="break two invariants on purpose")
    args = parser.parse_args()
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(HARD_LIMIT)  # bounded whatever happens; the server is stopped on the way out

    work = Path(os.environ.get("FAULT_TEST_DIR", "/tmp/usergroups-fault-test"))
    work.mkdir(parents=True, exist_ok=True)
    log_path = work / "gunicorn.log"
    log_path.unlink(missing_ok=True)
    recreate_database(DATABASE)
    env, key = migrated_site(DATABASE_URL, WORKSPACE)
    run_id = f"{int(time.time())}"

    server = Gunicorn(env, log_path, 3, "--max-requests", "0")
    faults: list[Fault] = []
    with server:
        workers_before = server.worker_pids()
        t0 = time.monotonic()
        deadline = t0 + args.seconds
        clients = [
            LoadClient(i, (HOST, server.port), key, deadline, t0, run_id, {"rotate": 1})
            for i in range(args.clients)
        ]
        for client in clients:
            client.start()

        time.sleep(args.seconds * 0.35)
        victim = random.choice(workers_before)
        at = time.monotonic() - t0
        os.kill(victim, signal.SIGKILL)
        faults.append(Fault(f"SIGKILL of worker {victim}", at, time.monotonic() - t0))

        time.sleep(args.seconds * 0.25)
        at = time.monotonic() - t0
        terminated = terminate_backends(DATABASE)
        faults.append(
            Fault(f"pg_terminate_backend of {terminated} connections", at, time.monotonic() - t0)
        )

        for client in clients:
            client.join(timeout=args.seconds + REQUEST_TIMEOUT * MAX_RETRIES)
        stuck = [client.name for client in clients if client.is_alive()]
        workers_after = server.worker_pids()
    log = server.log()

    # --- What the clients saw ---
    calls = sorted((c for client in clients for c in client.calls), key=lambda c: c.start)
    chains = [chain for client in clients for chain in client.chains]
    print(
        f"fault test: gunicorn, 3 sync workers, --max-requests 0, PostgreSQL database "
        f"'{DATABASE}'; {args.clients} clients for {args.seconds:.0f} s"
    )
    for fault in faults:
        print(f"  t={fault.start:5.1f} s  {fault.what}")
    print(f"  workers before: {workers_before}, after: {workers_after}")

    during = {id(c) for fault in faults for c in calls if fault.overlaps(c)}
    print(summarize("all", calls))
    print(summarize("before the faults", [c for c in calls if c.end < faults[0].start]))
    for fault in faults:
        near = [c for c in calls if fault.overlaps(c)]
        print(summarize(f"within {FAULT_WINDOW:.0f} s of the {fault.what.split(' of ')[0]}", near))
    print(
        summarize(
            "after the faults",
            [c for c in calls if c.start > faults[-1].end and id(c) not in during],
        )
    )
    print(f"  retries of unanswered requests: {sum(client.retries for client in clients)}")

    # --- What the database says ---
    os.environ.update({k: v for k, v in env.items() if k.startswith(("DJANGO_", "DATABASE_"))})
    import django

    django.setup()
    from usergroups import crypto
    from usergroups.models import UserGroup

    if args.tamper:
        rotated = next(chain for chain in chains if len(chain.tokens) > 1)
        UserGroup.objects.filter(provided_id=rotated.provided_id).update(
            token_digest=crypto.digest(rotated.tokens[-2])
        )
        created = next(chain for chain in chains if chain.created_seen and chain is not rotated)
        UserGroup.objects.filter(provided_id=created.provided_id).delete()
        print(
            f"  tampered: undid a rotation of {rotated.provided_id}, deleted {created.provided_id}"
        )

    groups = collections.defaultdict(list)
    for group in UserGroup.objects.filter(workspace__slug=WORKSPACE):
        groups[group.provided_id].append(group)
    stored = {
        provided_id: [{"token_digest": group.token_digest} for group in rows]
        for provided_id, rows in groups.items()
    }
    violations = []
    if stuck:
        violations.append(f"clients still running after the time limit: {stuck}")
    violations.extend(error for client in clients for error in client.errors)
    violations.extend(check_stored(chains, stored))
    for chain in chains:  # the sealed token opens to the one received
        rows = groups.get(chain.provided_id, [])
        if chain.created_seen and len(rows) == 1 and not (chain.ambiguous_end or chain.unknown_end):
            if rows[0].token_digest == crypto.digest(chain.tokens[-1]) and (
                rows[0].token != chain.tokens[-1]
            ):
                violations.append(f"{chain.provided_id}: the sealed token is not the one received")
    from tests.support.leaks import SECRET_SHAPE

    if SECRET_SHAPE.search(log):
        violations.append("the server log holds an API key or a group token")

    told = [chain for chain in chains if chain.created_seen]
    rotations = sum(len(chain.tokens) - 1 for chain in told)
    ambiguous = sum(chain.ambiguous_end for chain in told)
    unknown = sum(chain.unknown_end for chain in told)
    print(
        f"  groups told created: {len(told)} of {len(chains)} attempted; rotations answered "
        f"200: {rotations}; chains ended by a rotation that committed unseen: {ambiguous}, "
        f"with the outcome unknown: {unknown}"
    )
    print(
        f"  server log: {log.count('Internal Server Error')} internal server errors logged, "
        f"{log.count('SIGKILL')} worker kills noticed by the master"
    )
    if violations:
        print(f"FAILED: {len(violations)} invariant violations")
        for violation in violations[:50]:
            print(f"  {violation}")
        return 1
    print(
        "OK: every group told created exists exactly once with its client's last token; "
        "no rotation that answered 200 was lost"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

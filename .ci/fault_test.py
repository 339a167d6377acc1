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
import http.client
import json
import os
import random
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support import HOST  # noqa: E402
from tests.support.deployment import migrated_site  # noqa: E402
from tests.support.gunicorn import Gunicorn  # noqa: E402

DATABASE = "faults"
ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
DATABASE_URL = f"postgres://postgres@127.0.0.1:5432/{DATABASE}"
WORKSPACE = "faults"
REQUEST_TIMEOUT = 10
FAULT_WINDOW = 2.0  # a request in flight within this many seconds of a fault counts as "during"
HARD_LIMIT = 120  # seconds for the whole script, whatever happens
CHAIN = (2, 6)  # rotations per group, at random in this range
MAX_RETRIES = 20


@dataclass
class Call:
    op: str
    start: float
    end: float
    outcome: str  # "200", "404", "500", ... or an exception's name


@dataclass
class Chain:
    """One group, as its client saw it."""

    provided_id: str
    tokens: list[str] = field(default_factory=list)  # tokens received with a 200, in order
    created_seen: bool = False  # a 200 on get-or-create
    ambiguous_end: bool = False  # a rotation committed without the client seeing its token
    unknown_end: bool = False  # retries ran out: the outcome of the last rotation is unknown


class Client(threading.Thread):
    def __init__(self, number: int, port: int, key: str, deadline: float, t0: float, run: str):
        super().__init__(name=f"client-{number}", daemon=True)
        self.number, self.port, self.key = number, port, key
        self.deadline, self.t0, self.run_id = deadline, t0, run
        self.calls: list[Call] = []
        self.chains: list[Chain] = []
        self.retries = collections.Counter()
        self.random = random.Random(number)
        self.error: str | None = None

    def request(self, op: str, method: str, body: dict) -> tuple[str, dict | None]:
        start = time.monotonic()
        conn = http.client.HTTPConnection(HOST, self.port, timeout=REQUEST_TIMEOUT)
        try:
            conn.request(
                method,
                "/api/user",
                body=json.dumps(body),
                headers={"Authorization": f"Token {self.key}", "Content-Type": "application/json"},
            )
            response = conn.getresponse()
            raw = response.read()
            outcome = str(response.status)
            try:
                payload = json.loads(raw) if response.status < 500 else None
            except ValueError:
                outcome, payload = f"{response.status} (not JSON)", None
        except (OSError, http.client.HTTPException) as exc:
            outcome, payload = type(exc).__name__, None
        finally:
            conn.close()
        self.calls.append(Call(op, start - self.t0, time.monotonic() - self.t0, outcome))
        return outcome, payload

    def until_answered(self, op: str, method: str, body: dict) -> tuple[str, dict | None]:
        """Send until the answer is known (a 2xx or 4xx); ("unknown", None) if it never is."""
        for attempt in range(MAX_RETRIES):
            outcome, payload = self.request(op, method, body)
            if payload is not None:
                return outcome, payload
            self.retries[op] += 1
            time.sleep(min(0.05 * 2**attempt, 1.0))
        return "unknown", None

    def run(self) -> None:
        try:
            self.load()
        except Exception as exc:  # reported as a violation
            self.error = f"{self.name}: {exc!r}"

    def load(self) -> None:
        n = 0
        while time.monotonic() < self.deadline:
            chain = Chain(f"fault-{self.run_id}-{self.number}-{n}")
            n += 1
            self.chains.append(chain)
            outcome, payload = self.until_answered(
                "create", "GET", {"user_group_id": chain.provided_id}
            )
            if outcome != "200":
                continue
            chain.created_seen = True
            chain.tokens.append(payload["user_group"]["token"])
            for _ in range(self.random.randint(*CHAIN)):
                if time.monotonic() >= self.deadline:
                    break
                outcome, payload = self.request(
                    "rotate", "POST", {"current_token": chain.tokens[-1]}
                )
                if payload is None:  # unknown: did it commit? Ask again with the same token.
                    self.retries["rotate"] += 1
                    outcome, payload = self.until_answered(
                        "rotate", "POST", {"current_token": chain.tokens[-1]}
                    )
                    if outcome == "404":
                        chain.ambiguous_end = True  # it had committed; its token is lost
                        break
                    if outcome == "unknown":
                        chain.unknown_end = True
                        break
                if outcome != "200":
                    raise AssertionError(f"rotation answered {outcome}: {payload}")
                chain.tokens.append(payload["user_group"]["token"])


def recreate_database() -> None:
    import psycopg

    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DATABASE}")


def terminate_backends() -> int:
    import psycopg

    with psycopg.connect(DATABASE_URL.replace("postgres://", "postgresql://")) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = %s AND pid <> pg_backend_pid()",
            (DATABASE,),
        ).fetchall()
    return sum(1 for (done,) in rows if done)


def on_alarm(signum, frame):
    raise TimeoutError(f"the fault test ran over its limit of {HARD_LIMIT} s")


def summarize(label: str, calls: list[Call]) -> str:
    failed = [c for c in calls if not c.outcome.startswith(("2", "4"))]
    share = 100 * len(failed) / len(calls) if calls else 0.0
    answered = collections.Counter(c.outcome for c in calls)
    what = ", ".join(f"{outcome}×{n}" for outcome, n in sorted(answered.items()))
    return f"  {label}: {len(calls)} requests, {len(failed)} failed ({share:.1f}%): {what}"


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
    recreate_database()
    env, key = migrated_site(DATABASE_URL, WORKSPACE)
    run_id = f"{int(time.time())}"

    server = Gunicorn(env, log_path, 3, "--max-requests", "0")
    faults: list[tuple[str, float]] = []
    with server:
        workers_before = server.worker_pids()
        t0 = time.monotonic()
        deadline = t0 + args.seconds
        clients = [Client(i, server.port, key, deadline, t0, run_id) for i in range(args.clients)]
        for client in clients:
            client.start()

        time.sleep(args.seconds * 0.35)
        victim = random.choice(workers_before)
        os.kill(victim, signal.SIGKILL)
        faults.append((f"SIGKILL of worker {victim}", time.monotonic() - t0))

        time.sleep(args.seconds * 0.25)
        terminated = terminate_backends()
        faults.append((f"pg_terminate_backend of {terminated} connections", time.monotonic() - t0))

        for client in clients:
            client.join(timeout=args.seconds + REQUEST_TIMEOUT * MAX_RETRIES)
        stuck = [client.name for client in clients if client.is_alive()]
        workers_after = server.worker_pids()
    log = server.log()

    # --- What the clients saw ---
    calls = sorted((c for client in clients for c in client.calls), key=lambda c: c.start)
    chains = [chain for client in clients for chain in client.chains]
    retries = sum((client.retries for client in clients), collections.Counter())
    print(
        f"fault test: gunicorn, 3 sync workers, --max-requests 0, PostgreSQL database "
        f"'{DATABASE}'; {args.clients} clients for {args.seconds:.0f} s"
    )
    for what, at in faults:
        print(f"  t={at:5.1f} s  {what}")
    print(f"  workers before: {workers_before}, after: {workers_after}")

    def near(fault_at: float):
        return [c for c in calls if c.end >= fault_at and c.start <= fault_at + FAULT_WINDOW]

    during = {id(c) for _, at in faults for c in near(at)}
    print(summarize("all", calls))
    print(summarize("before the faults", [c for c in calls if c.end < faults[0][1]]))
    for what, at in faults:
        print(summarize(f"within {FAULT_WINDOW:.0f} s of the {what.split(' of ')[0]}", near(at)))
    print(
        summarize(
            "after the faults",
            [c for c in calls if c.start > faults[-1][1] and id(c) not in during],
        )
    )
    print(f"  retries of unanswered requests: {dict(retries) or 0}")

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

    rows = collections.defaultdict(list)
    for group in UserGroup.objects.filter(workspace__slug=WORKSPACE):
        rows[group.provided_id].append(group)
    violations = []
    if stuck:
        violations.append(f"clients still running after the time limit: {stuck}")
    violations.extend(client.error for client in clients if client.error)
    told = [chain for chain in chains if chain.created_seen]
    rotations = sum(len(chain.tokens) - 1 for chain in told)
    for chain in chains:
        stored = rows.get(chain.provided_id, [])
        if not chain.created_seen:
            if len(stored) > 1:
                violations.append(f"{chain.provided_id}: {len(stored)} groups")
            continue
        if len(stored) != 1:
            violations.append(f"{chain.provided_id}: told created, {len(stored)} groups stored")
            continue
        group = stored[0]
        rotated_away = {crypto.digest(token) for token in chain.tokens[:-1]}
        if group.token_digest in rotated_away:
            violations.append(f"{chain.provided_id}: a token rotated away with a 200 is current")
        elif chain.ambiguous_end or chain.unknown_end:
            if chain.ambiguous_end and group.token_digest == crypto.digest(chain.tokens[-1]):
                violations.append(f"{chain.provided_id}: a rotation answered 404, yet undone")
        elif group.token_digest != crypto.digest(chain.tokens[-1]):
            violations.append(f"{chain.provided_id}: the last token answered 200 is not current")
        elif group.token != chain.tokens[-1]:
            violations.append(f"{chain.provided_id}: the sealed token is not the one received")
    # The run's ids only: every stored group is one a client asked for.
    unasked = set(rows) - {chain.provided_id for chain in chains}
    if unasked:
        violations.append(f"groups no client asked for: {sorted(unasked)[:5]}")
    from tests.support.leaks import SECRET_SHAPE

    if SECRET_SHAPE.search(log):
        violations.append("the server log holds an API key or a group token")

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

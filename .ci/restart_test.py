#!/usr/bin/env python3
"""Restart test: the read model (CONTRACT section 9) through a PostgreSQL restart.

example_project under gunicorn (3 sync workers) on its own PostgreSQL database,
``restarts``, made anew; every worker listens. In each round a client keeps using an
embed token through the workers while the server is restarted (``pg_ctlcluster ...
restart -m fast``, which ends every connection, the listening ones with them); as soon as
the server answers again, the token is revoked through the API. No use that started
after the revocation's answer may be served; uses before the restart and between the
restart and the revocation must be, so the run shows the token was held and served
throughout; and every worker listens again at the end.

Restarts the machine's PostgreSQL: run it alone (.ci/run runs it after the fault test).
Loopback only, bounded (HARD_LIMIT). Needs root, or sudo, for pg_ctlcluster.

    .venv/bin/python .ci/restart_test.py [--rounds 3] [--tamper]

``--tamper`` proves the check can fail: the revocation is written straight into the
database with the triggers switched off for the session (``session_replication_role``),
so no worker hears it; a worker then serves a revoked token and the script exits 1.
"""

import argparse
import functools
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from tests.support.deployment import migrated_site  # noqa: E402
from tests.support.gunicorn import Gunicorn  # noqa: E402
from tests.support.http import call_api, exchange  # noqa: E402
from tests.support.postgres import direct_url, listening_backends, recreate_database  # noqa: E402

DATABASE = "restarts"
WORKSPACE = "restarts"
WORKERS = 3
HARD_LIMIT = 150  # seconds for the whole script, whatever happens
SALES = "/embed/api/sales/"
MINT = "/api/user/embed-token"
# A group the example dashboard's sales endpoint serves (a data source, a region).
SALES_GROUP = {"mapping": {"sales": "eu_warehouse"}, "properties": {"regions": ["DE"]}}


def on_alarm(signum, frame):
    raise TimeoutError(f"the restart test ran over its limit of {HARD_LIMIT} s")


def restart_postgres() -> None:
    version = next(iter(sorted(os.listdir("/etc/postgresql"))))
    command = ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"]
    command += ["-m", "fast"]
    if os.geteuid() != 0:
        command.insert(0, "sudo")
    subprocess.run(command, check=True, timeout=60)


def until_answered(call, seconds: float = 30):
    """``call()`` retried through connection errors and 5xx (the server coming back)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            status, body = call()
            if status < 500:
                return status, body
        except OSError:
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            return status, body
        time.sleep(0.05)


class Uses(threading.Thread):
    """Uses of one embed token, back to back, each noted with its start, its status, and
    whether the revocation had answered before it started."""

    def __init__(self, base_url: str, token: str) -> None:
        super().__init__(daemon=True)
        self.base_url, self.token = base_url, token
        self.revoked = threading.Event()
        self.stop = threading.Event()
        self.uses: list[tuple[float, int, bool]] = []

    def run(self) -> None:
        while not self.stop.is_set():
            after_revocation = self.revoked.is_set()
            start = time.monotonic()
            try:
                status = exchange(self.base_url, "GET", None, f"Embed {self.token}", path=SALES)[0]
            except OSError:
                status = 0
            self.uses.append((start, status, after_revocation))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tamper", action="store_true", help="revoke unheard, on purpose")
    args = parser.parse_args()
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(HARD_LIMIT)

    work = Path(os.environ.get("RESTART_TEST_DIR", "/tmp/usergroups-restart-test"))
    work.mkdir(parents=True, exist_ok=True)
    log_path = work / "gunicorn.log"
    log_path.unlink(missing_ok=True)
    recreate_database(DATABASE)
    env, key = migrated_site(direct_url(DATABASE), WORKSPACE)

    violations: list[str] = []
    with Gunicorn(env, log_path, WORKERS, "--max-requests", "0") as server:
        deadline = time.monotonic() + 30
        while len(listening_backends(DATABASE)) < WORKERS and time.monotonic() < deadline:
            call_api(server.base_url, key, "GET", {"user_group_id": "listening"})
        print(
            f"restart test: gunicorn, {WORKERS} sync workers, {len(listening_backends(DATABASE))} listening"
        )
        for round_ in range(1, args.rounds + 1):
            provided_id = f"restart-{uuid.uuid4().hex[:12]}"
            group = {"user_group_id": provided_id, **SALES_GROUP}
            assert call_api(server.base_url, key, "GET", group)[0] == 200
            status, body = call_api(
                server.base_url, key, "POST", {"user_group_id": provided_id}, path=MINT
            )
            assert status == 200, body
            uses = Uses(server.base_url, body["embed_token"])
            uses.start()
            time.sleep(0.5)
            restarted_at = time.monotonic()
            restart_postgres()
            up_at = time.monotonic()
            if args.tamper:
                with psycopg.connect(direct_url(DATABASE), autocommit=True) as direct:
                    direct.execute("SET session_replication_role = replica")
                    direct.execute(
                        "UPDATE usergroups_usergroup SET embed_generation = embed_generation + 1,"
                        " embed_tokens_revoked_at = now() WHERE provided_id = %s",
                        (provided_id,),
                    )
            else:
                revoke = functools.partial(
                    call_api,
                    server.base_url,
                    key,
                    "POST",
                    {"user_group_id": provided_id},
                    path=f"{MINT}/revoke",
                )
                status, body = until_answered(revoke)
                if status != 200:
                    violations.append(f"round {round_}: the revocation answered {status}: {body}")
            uses.revoked.set()
            revoked_at = time.monotonic()
            time.sleep(1.0)
            uses.stop.set()
            uses.join(30)

            before = [s for start, s, _ in uses.uses if start < restarted_at]
            between = [s for start, s, after in uses.uses if start > up_at and not after]
            after = [s for _, s, after in uses.uses if after]
            served_after = [s for s in after if s != 401]
            print(
                f"  round {round_}: restart {up_at - restarted_at:.1f} s, revoked"
                f" {revoked_at - up_at:.2f} s after; uses before {len(before)}"
                f" ({before.count(200)} served), after the restart and before the revocation"
                f" {len(between)} ({between.count(200)} served), after the revocation's answer"
                f" {len(after)} ({len(served_after)} served)"
            )
            if served_after:
                violations.append(
                    f"round {round_}: {len(served_after)} uses served after the revocation"
                )
            if not before or before.count(200) != len(before):
                violations.append(f"round {round_}: the token was not served before the restart")
        deadline = time.monotonic() + 30
        while len(listening_backends(DATABASE)) < WORKERS and time.monotonic() < deadline:
            call_api(server.base_url, key, "GET", {"user_group_id": "listening"})
            time.sleep(0.2)
        listening = len(listening_backends(DATABASE))
        print(f"  listening at the end: {listening} of {WORKERS} workers")
        if listening < WORKERS:
            violations.append(f"only {listening} of {WORKERS} workers listen again")
    if violations:
        print(f"FAILED: {len(violations)} violations")
        for violation in violations:
            print(f"  {violation}")
        return 1
    print("OK: no revoked token served through the restarts; every worker listens again")
    return 0


if __name__ == "__main__":
    sys.exit(main())

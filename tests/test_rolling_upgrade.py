"""A migration that widens a column while the server runs breaks no request (issue 20), on
PostgreSQL directly and behind PgBouncer in transaction mode.

In a rolling upgrade the new release's migrations run while the old code still serves. A
statement prepared on a server connection keeps the result type it was planned with:
once a column it reads is widened, PostgreSQL refuses to run it ("cached plan must not
change result type") for as long as that connection lives, and every request that runs
it answers 500. So here the connections are warm and outlive the run.

gunicorn runs ``example_project`` as deployed (``WORKERS`` sync workers, persistent
connections with health checks) on a PostgreSQL database of its own, whatever
``DATABASE_URL`` says. ``CLIENTS`` clients of tests/support/load.py create groups, get
them, rotate their tokens, mint embed tokens and introspect them for ``WARM`` seconds; then
``migrate`` (through the server's own ``DATABASE_URL``, as a deploy would) applies
tests/rolling_upgrade's migration, which widens the ``name`` of groups and API keys; the
load goes on for ``AFTER`` seconds. Every request must get an answer, none a 5xx.

Loopback only; bounded in time (the load's deadline, request timeouts and retries, joins).
"""

import os
import secrets
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import HOST
from tests.support.deployment import manage, server_env
from tests.support.gunicorn import Gunicorn, free_port
from tests.support.ledger import Call, summarize
from tests.support.load import MAX_RETRIES, REQUEST_TIMEOUT, LoadClient
from tests.support.pgbouncer import PgBouncer
from tests.support.postgres import ADDRESS, direct_url, drop_database, recreate_database

pytestmark = [pytest.mark.live, pytest.mark.slow]

WORKERS = 3
CLIENTS = 6
WARM = 3.0  # seconds of load before the migration: every worker has run every statement
AFTER = 5.0  # seconds of load after it
LOAD_LIMIT = 120.0  # seconds, should the migration never end
MIX = {"get": 3, "rotate": 2, "embed": 2}  # after each group's creation; embed: mint, introspect
WORKSPACE = "upgrade"
UPGRADE_SETTINGS = "tests.rolling_upgrade.settings"
WIDENED_TABLES = ("usergroups_usergroup", "usergroups_apikey")
WIDENED_LENGTH = 300
SERVER_VARIABLES = {
    "DATABASE_CONN_MAX_AGE": "600",  # every connection outlives the run
}


@dataclass
class Upgrade:
    """What the clients saw before and after the migration, and what else went wrong."""

    before: list[Call]
    after: list[Call]  # requests that started once the migration was applied
    errors: list[str]  # answers the contract rules out, clients that never ended
    widened: dict[str, int]  # each widened table: its column's length afterwards
    log: str


def upgrade_under_load(serving_url: str, database: str, workdir: Path, **variables: str):
    """Serve ``database`` at ``serving_url`` under load and widen its columns midway;
    ``variables`` add to the server's environment (and the migration's)."""
    env = server_env(serving_url, **{**SERVER_VARIABLES, **variables})
    manage(env, "migrate", "--noinput")
    key = manage(env, "create_api_key", "--workspace", WORKSPACE).strip()
    with Gunicorn(env, workdir / "gunicorn.log", WORKERS, "--max-requests", "0") as server:
        t0 = time.monotonic()
        run_id = secrets.token_hex(4)
        clients = [
            LoadClient(i, (HOST, server.port), key, t0 + LOAD_LIMIT, t0, run_id, MIX)
            for i in range(CLIENTS)
        ]
        for client in clients:
            client.start()
        try:
            time.sleep(WARM)
            manage({**env, "DJANGO_SETTINGS_MODULE": UPGRADE_SETTINGS}, "migrate", "--noinput")
            applied = time.monotonic() - t0
            time.sleep(AFTER)
        finally:
            for client in clients:
                client.deadline = 0.0  # each ends after its request in flight
            for client in clients:
                client.join(timeout=REQUEST_TIMEOUT * MAX_RETRIES)
    calls = [call for client in clients for call in client.calls]
    errors = [error for client in clients for error in client.errors]
    errors += [f"{client.name} still running" for client in clients if client.is_alive()]
    return Upgrade(
        before=[call for call in calls if call.start < applied],
        after=[call for call in calls if call.start >= applied],
        errors=errors,
        widened=column_lengths(database),
        log=server.log(),
    )


def column_lengths(database: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(f"postgresql://postgres@{ADDRESS[0]}:{ADDRESS[1]}/{database}") as conn:
        rows = conn.execute(
            "SELECT table_name, character_maximum_length FROM information_schema.columns"
            " WHERE table_name = ANY(%s) AND column_name = 'name'",
            (list(WIDENED_TABLES),),
        ).fetchall()
    return dict(rows)


@pytest.fixture
def database():
    """A PostgreSQL database made for this test, dropped after it: its name."""
    name = f"usergroups_upgrade_{os.getpid()}_{secrets.token_hex(4)}"
    recreate_database(name)
    try:
        yield name
    finally:
        drop_database(name)


@pytest.fixture
def workdir():
    with tempfile.TemporaryDirectory(prefix="usergroups-upgrade-") as path:
        yield Path(path)


@pytest.fixture(
    params=[
        pytest.param("direct", marks=pytest.mark.needs("postgresql")),
        pytest.param("pgbouncer", marks=pytest.mark.needs("postgresql", "pgbouncer")),
    ]
)
def serving_url(request, database, workdir):
    """The server's ``DATABASE_URL``: the database itself, or PgBouncer in transaction mode
    in front of it (with what docs/deployment.md says must be off there)."""
    if request.param == "direct":
        yield direct_url(database)
        return
    bouncer = PgBouncer(workdir, database, HOST, free_port(), ADDRESS).start()
    try:
        yield bouncer.url(database) + "?disable_server_side_cursors=True"
    finally:
        bouncer.stop()


def test_a_migration_that_widens_a_column_under_load_breaks_no_request(
    serving_url, database, workdir
):
    upgrade = upgrade_under_load(serving_url, database, workdir)
    print(summarize("before the migration", upgrade.before))
    print(summarize("after it", upgrade.after))

    assert upgrade.widened == dict.fromkeys(WIDENED_TABLES, WIDENED_LENGTH)
    calls = upgrade.before + upgrade.after
    unanswered = [call for call in calls if not call.outcome[:3].isdigit()]
    server_errors = [call for call in calls if call.outcome.startswith("5")]
    assert not unanswered, summarize("unanswered", unanswered)
    assert not server_errors, summarize("5xx", server_errors)
    assert not upgrade.errors, upgrade.errors[:20]
    assert "Traceback" not in upgrade.log, upgrade.log[-5000:]
    # Every statement was warm before the change and ran again after it.
    for ops, label in ((upgrade.before, "before"), (upgrade.after, "after")):
        succeeded = {call.op for call in ops if call.outcome == "200"}
        assert succeeded >= {"create", "get", "rotate", "mint", "verify"}, (label, succeeded)

"""What must be off behind PgBouncer in transaction mode (docs/deployment.md), and why:
a cursor Django declares ``WITH HOLD`` outside a transaction (what ``.iterator()`` does in
autocommit; ``DISABLE_SERVER_SIDE_CURSORS``) and a prepared statement (the app's
``PREPARED_STATEMENTS``) both live on one server connection, and PgBouncer may lend that
connection to another client before the next use. The app's statements recover."""

import collections

import psycopg
import pytest

from tests.support import HOST
from tests.support.cluster import DATABASE
from tests.support.concurrency import run_together

pytestmark = pytest.mark.cluster

LOST = "lost a prepared statement"  # usergroups.prepared's warning


def test_a_held_cursor_is_lost_between_transactions(cluster):
    url = cluster.pgbouncer.url(DATABASE, host=HOST).replace("postgres://", "postgresql://")
    with psycopg.connect(url, autocommit=True) as iterating, psycopg.connect(url) as other:
        iterating.execute("DECLARE rows CURSOR WITH HOLD FOR SELECT generate_series(1, 10)")
        # Another client's transaction takes the server connection just given back
        # (PgBouncer reuses the most recently released one first)...
        other.execute("SELECT 1")
        # ...so the next fetch runs on another server connection, without the cursor.
        with pytest.raises(psycopg.errors.InvalidCursorName):
            iterating.execute("FETCH 5 FROM rows")
        other.rollback()
    # Outside PgBouncer (or in a transaction) the same fetch works: the cursor is fine,
    # the pooling is what loses it.
    direct = url.replace(f"{HOST}:{cluster.pgbouncer.port}", "127.0.0.1:5432")
    with psycopg.connect(direct, autocommit=True) as conn:
        conn.execute("DECLARE rows CURSOR WITH HOLD FOR SELECT generate_series(1, 10)")
        assert len(conn.execute("FETCH 5 FROM rows").fetchall()) == 5


def test_a_prepared_statement_is_lost_between_transactions(cluster):
    url = cluster.pgbouncer.url(DATABASE, host=HOST).replace("postgres://", "postgresql://")
    with (
        psycopg.connect(url, autocommit=True, prepare_threshold=0) as preparing,
        psycopg.connect(url) as other,
    ):
        preparing.execute("SELECT %s::int", [1])  # prepared on the connection lent now
        other.execute("SELECT 1")  # holds that server connection in its transaction
        with pytest.raises(psycopg.errors.InvalidSqlStatementName):
            preparing.execute("SELECT %s::int", [1])
        other.rollback()


@pytest.fixture
def preparing_hosts(cluster):
    """The hosts restarted with the app's statements prepared (against the advice for
    PgBouncer 1.18); restarted with the cluster's settings afterwards."""
    cluster.restart_hosts(USERGROUPS_PREPARED_STATEMENTS="true")
    try:
        yield cluster
    finally:
        cluster.restart_hosts()


def test_hosts_that_prepare_behind_pgbouncer_still_answer(preparing_hosts, figures):
    """Each process meets a lost statement at its first reads, stops preparing and reads
    again: every get (reads outside a transaction) is answered."""
    lost_before = sum(host.log().count(LOST) for host in preparing_hosts.hosts)
    for i in range(4):  # made one at a time: no insert race, whose loser reads in a transaction
        status, body, _ = preparing_hosts.call("GET", {"user_group_id": f"prep-{i}"})
        assert status == 200, body
    statuses: collections.Counter = collections.Counter()
    hosts: collections.Counter = collections.Counter()
    for round_no in range(6):
        for status, body, host in run_together(
            8,
            lambda i, r=round_no: preparing_hosts.call("GET", {"user_group_id": f"prep-{i % 4}"}),
        ):
            statuses[status] += 1
            hosts[host] += 1
            assert status == 200, body
    assert set(hosts) == set(preparing_hosts.names), dict(hosts)
    # Logs are appended to across restarts: count this run's processes' warnings.
    stopped = sum(host.log().count(LOST) for host in preparing_hosts.hosts) - lost_before
    figures.append(
        f"preparing left on behind PgBouncer 1.18: {statuses[200]} of {sum(statuses.values())}"
        f" gets answered 200 (by host: {dict(sorted(hosts.items()))}); {stopped} processes"
        " met a lost statement and stopped preparing"
    )
    assert stopped >= 1  # the recovery, not luck, is what answered

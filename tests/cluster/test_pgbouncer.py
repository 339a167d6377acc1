"""What must be off behind PgBouncer in transaction mode (docs/deployment.md), and why:
a cursor Django declares ``WITH HOLD`` outside a transaction (what ``.iterator()`` does in
autocommit; ``DISABLE_SERVER_SIDE_CURSORS``) and a prepared statement (psycopg's
``prepare_threshold``) both live on one server connection, and PgBouncer may lend that
connection to another client before the next use."""

import collections

import psycopg
import pytest

from tests.support import HOST
from tests.support.cluster import DATABASE
from tests.support.concurrency import run_together

pytestmark = pytest.mark.cluster


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


def test_hosts_behind_pgbouncer_answer_each_request_its_own_group(cluster, figures):
    """Concurrent gets on every host, on whichever server connection PgBouncer lends: each
    is answered, and with the group it asked for (0.2's prepared statements once answered
    another client's statement there)."""
    for i in range(4):  # made one at a time: no insert race, whose loser reads in a transaction
        status, body, _ = cluster.call("GET", {"user_group_id": f"prep-{i}"})
        assert status == 200, body
    answers: collections.Counter = collections.Counter()
    hosts: collections.Counter = collections.Counter()
    for round_no in range(6):
        for asked, (status, body, host) in enumerate(
            run_together(
                8,
                lambda i, r=round_no: cluster.call("GET", {"user_group_id": f"prep-{i % 4}"}),
            )
        ):
            hosts[host] += 1
            assert status == 200, body
            answers[body["user_group"]["provided_id"] == f"prep-{asked % 4}"] += 1
    assert set(hosts) == set(cluster.names), dict(hosts)
    assert answers == {True: 48}, answers
    figures.append(
        f"concurrent gets behind PgBouncer 1.18: {answers[True]} of"
        f" 48 concurrent gets answered 200 with the group asked for (by host:"
        f" {dict(sorted(hosts.items()))})"
    )

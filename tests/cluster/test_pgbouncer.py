"""Why Django needs ``DISABLE_SERVER_SIDE_CURSORS`` behind PgBouncer in transaction mode
(docs/deployment.md): a cursor Django declares ``WITH HOLD`` outside a transaction (what
``.iterator()`` does in autocommit) lives on one server connection, and PgBouncer may lend
that connection to another client before the next fetch."""

import psycopg
import pytest

from tests.support import HOST
from tests.support.cluster import DATABASE

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

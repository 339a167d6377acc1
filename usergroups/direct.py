"""The app's fixed reads on SQLite, run on the driver's own cursor.

Through Django's cursor, a read pays for a wrapper made per query, an SQLite wrapper that
rewrites the statement's placeholders on every execution, the execute wrappers and the
error wrapper: 35 µs of Python around a lineage read that SQLite runs in 23 (benchmark
data, in process). The statements of :mod:`usergroups.sql` never change, so they come
here as the driver takes them (written once, ``sql._Prepared.native``), and a read runs
on one ``sqlite3`` cursor kept per connection, inside Django's error wrapper (the same
exceptions as ever).

Django's own path is taken whenever it adds something: a query log (``DEBUG``,
``assertNumQueries``), execute wrappers (instrumentation, ``connection.execute_wrapper``),
an atomic block (its broken-transaction check), no connection yet. Django's health check
of a connection is nothing on SQLite (a file is always usable).
"""

from collections.abc import Mapping, Sequence
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils.asyncio import async_unsafe


def takes(connection: BaseDatabaseWrapper) -> bool:
    """Whether a read on ``connection`` (SQLite) may skip Django's cursor."""
    return (
        connection.connection is not None
        and not connection.queries_logged
        and not connection.execute_wrappers
        and not connection.in_atomic_block
    )


@async_unsafe
def fetch_all(
    connection: BaseDatabaseWrapper, sql: str, params: Sequence[Any] | Mapping[str, Any]
) -> list[Any]:
    """The rows of ``sql`` (``:p0`` placeholders) with ``params``, on the connection's
    kept ``sqlite3`` cursor."""
    raw = connection.connection
    cursor = getattr(connection, "_usergroups_cursor", None)
    if cursor is None or cursor.connection is not raw:
        cursor = connection._usergroups_cursor = raw.cursor()  # type: ignore[attr-defined]
    with connection.wrap_database_errors:
        return cursor.execute(sql, params).fetchall()

"""Server-side prepared statements for the app's fixed SQL on PostgreSQL (psycopg 3).

Django binds parameters on the client, so PostgreSQL parses and plans every statement
again on every execution. Planning a lineage statement costs the server more than
running it (about 0.11 ms against 0.03 on the benchmark's data; bench/RESULTS.md), and a
get pays it on every request. The statements of :mod:`usergroups.sql` never change shape,
so here they are bound on the server and prepared once per connection: later executions
skip parsing and planning. Every other query of the site is left as Django runs it.

A pooler that hands one client's statements to several server connections (PgBouncer
in transaction mode before 1.21, or without ``max_prepared_statements``) cannot keep
prepared statements: set ``USERGROUPS["PREPARED_STATEMENTS"] = False`` there. If one is
met anyway (the server does not know a statement psycopg prepared, or knows its name
already), preparing stops for that database in this process, with a warning, and a read
outside a transaction runs again unprepared, so the request still succeeds.
"""

import logging
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC
from typing import Any

from django.db import DatabaseError
from django.db.backends.base.base import BaseDatabaseWrapper

from .conf import usergroups_settings

logger = logging.getLogger(__name__)

try:
    import psycopg
    from django.db.backends.postgresql.psycopg_any import register_tzloader
    from psycopg import errors as pg_errors
    from psycopg.pq import Format
    from psycopg.types.datetime import TimestamptzLoader
except ImportError:  # psycopg 2 or no PostgreSQL driver: nothing is prepared
    psycopg = None  # type: ignore[assignment]

#: The aliases on which a pooler refused prepared statements, in this process.
_refused: set[str] = set()


def _lost_statement(exc: BaseException) -> bool:
    """Whether ``exc`` says the server lost or already had a prepared statement."""
    cause = exc.__cause__
    return psycopg is not None and isinstance(
        cause, pg_errors.InvalidSqlStatementName | pg_errors.DuplicatePreparedStatement
    )


def preparing(connection: BaseDatabaseWrapper) -> bool:
    """Whether the app's statements are prepared on ``connection``."""
    return (
        psycopg is not None
        and connection.vendor == "postgresql"
        and isinstance(connection.connection, psycopg.Connection)
        and connection.alias not in _refused
        and bool(usergroups_settings.PREPARED_STATEMENTS)
    )


def _preparing_cursor(connection: BaseDatabaseWrapper) -> Any:
    """The connection's server-binding cursor that prepares what it runs: one per
    database connection, kept for its next read (making one is half a read's Python)."""
    raw = connection.connection
    kept = getattr(connection, "_usergroups_cursor", None)
    if kept is not None and kept.connection is raw and not kept.closed:
        return kept
    if raw.prepare_threshold is None:  # Django's default: psycopg would never prepare
        raw.prepare_threshold = sys.maxsize  # only what is asked for explicitly
    cursor = _PreparingCursor(raw)
    timezone = getattr(connection, "timezone", None)
    if timezone is UTC and raw.info.timezone is UTC:
        # Both sides UTC: psycopg's own loader (in C) gives what Django's (in Python,
        # registered on the connection) does, about 3 µs sooner per timestamp.
        cursor.adapters.register_loader("timestamptz", TimestamptzLoader)
    else:
        loader = raw.adapters.get_loader(psycopg.postgres.types["timestamptz"].oid, Format.TEXT)
        if timezone is not None and getattr(loader, "timezone", timezone) != timezone:
            register_tzloader(timezone, cursor)  # as Django's create_cursor does
    connection._usergroups_cursor = cursor  # type: ignore[attr-defined]
    return cursor


def _rows(connection: BaseDatabaseWrapper, sql: str, params: Any) -> list[Any]:
    wrapper = connection.cursor()  # connects, checks health, wraps for the query log
    if not preparing(connection):
        with wrapper:
            wrapper.execute(sql, params)
            return list(wrapper.fetchall())  # mysqlclient gives a tuple
    wrapper.cursor.close()
    wrapper.cursor = _preparing_cursor(connection)  # not closed after: kept
    wrapper.execute(sql, params)
    return list(wrapper.fetchall())


def fetch_all(
    connection: BaseDatabaseWrapper, sql: str, params: Sequence[Any] | Mapping[str, Any]
) -> list[Any]:
    """The rows of ``sql`` run with ``params``, prepared where :func:`preparing` allows."""
    try:
        return _rows(connection, sql, params)
    except DatabaseError as exc:
        if not _lost_statement(exc):
            raise
        _refused.add(connection.alias)
        logger.warning(
            "The database %r lost a prepared statement (a pooler in transaction mode?): "
            "preparing stops in this process; set USERGROUPS['PREPARED_STATEMENTS'] = False.",
            connection.alias,
        )
        if connection.in_atomic_block:
            raise
    return _rows(connection, sql, params)


if psycopg is not None:

    class _PreparingCursor(psycopg.Cursor[Any]):
        """A server-binding cursor whose every statement is prepared (once per
        connection: psycopg keeps the names)."""

        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            kwargs["prepare"] = True
            result = super().execute(query, params, **kwargs)
            # psycopg keeps no query text for a prepared execution; Django's query log
            # (``connection.queries``, assertNumQueries) reads it from ``_query.query``.
            self._query = _LoggedQuery(self.connection, query, params)  # type: ignore[assignment]
            return result

    class _LoggedQuery:
        """The statement with its values, as Django logs a query: composed only when
        the log reads it (with DEBUG or in tests), never on the hot path."""

        def __init__(self, connection: Any, sql: str, params: Any) -> None:
            self.connection, self.sql, self.params = connection, sql, params

        @property
        def query(self) -> bytes:
            return psycopg.ClientCursor(self.connection).mogrify(self.sql, self.params).encode()

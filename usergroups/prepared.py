"""Server-side prepared statements for the app's fixed SQL on PostgreSQL (psycopg 3).

Django binds parameters on the client, so PostgreSQL parses and plans every statement
again on every execution. Planning a lineage statement costs the server more than
running it (about 0.11 ms against 0.03 on the benchmark's data; bench/RESULTS.md), and a
get pays it on every request. The statements of :mod:`usergroups.sql` never change shape,
so here each is prepared once per server connection and run by ``EXECUTE``: later runs
skip parsing and planning. Every other query of the site is left as Django runs it.

A statement is prepared by SQL under a name that is the digest of its text
(``PREPARE usergroups_<digest> AS ...``), not under psycopg's own names, which count up
per client connection (``_pg3_0``, ``_pg3_1``...). A pooler in transaction mode (PgBouncer
before 1.21) lends one server connection to many clients: there, one client's ``_pg3_0``
would run whatever another client prepared under that name. A server connection that
holds a ``usergroups_<digest>`` holds this very statement, whoever prepared it; one that
lacks it answers ``EXECUTE`` with an error, and the statement is prepared there and run
again. A read inside a transaction runs unprepared: there such an error would abort it.
"""

import functools
import hashlib
from collections.abc import Mapping, Sequence
from datetime import UTC
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper

from usergroups.conf import usergroups_settings

try:
    import psycopg
    from django.db.backends.postgresql.psycopg_any import register_tzloader
    from psycopg import errors as pg_errors
    from psycopg.pq import Format, TransactionStatus
    from psycopg.types.datetime import TimestamptzLoader
except ImportError:  # psycopg 2 or no PostgreSQL driver: nothing is prepared
    psycopg = None  # type: ignore[assignment]


def preparing(connection: BaseDatabaseWrapper) -> bool:
    """Whether the app's statements are prepared on ``connection``."""
    return (
        psycopg is not None
        and connection.vendor == "postgresql"
        and isinstance(connection.connection, psycopg.Connection)
        and bool(usergroups_settings.PREPARED_STATEMENTS)
    )


def statement_name(sql: str) -> str:
    """The name ``sql`` is prepared under: the same text, the same name, on every client."""
    return "usergroups_" + hashlib.sha256(sql.encode()).hexdigest()[:24]


@functools.cache
def _texts(query: str) -> tuple[str, str, str]:
    """``(name, PREPARE text, EXECUTE text)`` of ``query`` (``%s`` placeholders): the same
    for every connection, so written once per process."""
    name, parts = statement_name(query), query.split("%s")
    numbered = "".join(f"{part}${i}" for i, part in enumerate(parts[:-1], 1))
    marks = ", ".join(["%s"] * (len(parts) - 1))
    run = f"EXECUTE {name}({marks})" if marks else f"EXECUTE {name}"
    return name, f"PREPARE {name} AS {numbered}{parts[-1]}", run


def _preparing_cursor(connection: BaseDatabaseWrapper) -> Any:
    """The cursor that runs statements prepared on ``connection``'s database connection:
    kept on it (making one is half a read's Python), and with it what that connection has
    prepared, as long as it lives (a pool lends its connections to request after request)."""
    raw = connection.connection
    kept = getattr(raw, "_usergroups_cursor", None)
    if kept is not None and not kept.closed:
        return kept
    cursor = _PreparedCursor(raw)
    timezone = getattr(connection, "timezone", None)
    if timezone is UTC and raw.info.timezone is UTC:
        # Both sides UTC: psycopg's own loader (in C) gives what Django's (in Python,
        # registered on the connection) does, about 3 µs sooner per timestamp.
        cursor.adapters.register_loader("timestamptz", TimestamptzLoader)
    else:
        loader = raw.adapters.get_loader(psycopg.postgres.types["timestamptz"].oid, Format.TEXT)
        if timezone is not None and getattr(loader, "timezone", timezone) != timezone:
            register_tzloader(timezone, cursor)  # as Django's create_cursor does
    raw._usergroups_cursor = cursor
    return cursor


def _outside_transaction(connection: BaseDatabaseWrapper) -> bool:
    raw = connection.connection
    return bool(raw.autocommit) and raw.info.transaction_status == TransactionStatus.IDLE


def fetch_all(
    connection: BaseDatabaseWrapper, sql: str, params: Sequence[Any] | Mapping[str, Any]
) -> list[Any]:
    """The rows of ``sql`` run with ``params``, prepared where :func:`preparing` allows
    and outside a transaction."""
    wrapper = connection.cursor()  # connects, checks health, wraps for the query log
    if not preparing(connection) or not _outside_transaction(connection):
        with wrapper:
            wrapper.execute(sql, params)
            return list(wrapper.fetchall())  # mysqlclient gives a tuple
    wrapper.cursor.close()
    wrapper.cursor = _preparing_cursor(connection)  # not closed after: kept
    wrapper.execute(sql, params)
    return list(wrapper.fetchall())


if psycopg is not None:

    class _PreparedCursor(psycopg.ClientCursor[Any]):
        """Runs each statement as ``EXECUTE`` of the statement prepared under
        :func:`statement_name`, preparing it first where the server lacks it."""

        def __init__(self, connection: Any) -> None:
            super().__init__(connection)
            #: The names this client believes its server connection holds (behind a
            #: pooler, the next server connection may not).
            self.prepared: set[str] = set()

        def _prepare(self, name: str, text: str) -> None:
            try:
                super().execute(text)
            except pg_errors.DuplicatePreparedStatement:
                pass  # prepared there already, by this client or another: the same text
            self.prepared.add(name)

        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            name, prepare, run = _texts(query)
            if name not in self.prepared:
                self._prepare(name, prepare)
            try:
                super().execute(run, params, **kwargs)
            except pg_errors.InvalidSqlStatementName:
                # Another server connection than the one it was prepared on (a pooler).
                self._prepare(name, prepare)
                try:
                    super().execute(run, params, **kwargs)
                except pg_errors.InvalidSqlStatementName:  # yet another: run it as it is
                    super().execute(query, params, **kwargs)
            # Django's query log (``connection.queries``, assertNumQueries) reads the
            # statement from ``_query.query``: the statement run, not the EXECUTE.
            self._query = _LoggedQuery(self.connection, query, params)  # type: ignore[assignment]
            return self

    class _LoggedQuery:
        """The statement with its values, as Django logs a query: composed only when
        the log reads it (with DEBUG or in tests), never on the hot path."""

        def __init__(self, connection: Any, sql: str, params: Any) -> None:
            self.connection, self.sql, self.params = connection, sql, params

        @property
        def query(self) -> bytes:
            # Another cursor: composing on the one that ran would drop its result.
            return psycopg.ClientCursor(self.connection).mogrify(self.sql, self.params).encode()

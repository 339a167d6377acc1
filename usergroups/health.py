"""A request's first read standing in for Django's health check of the connection.

With ``CONN_HEALTH_CHECKS`` on, Django checks a persistent connection before a request's
first query (PostgreSQL: a ``SELECT 1``, a round trip on every request). When that first
query is one of the app's own reads (an API key's lookup, an embed token's group), the
read is the check: if it fails on a connection that turns out to be dead, the connection
is closed and the read runs again on a new one. The guarantee is Django's (a connection
broken while idle never fails a request), one round trip fewer. A read the database
refuses on a live connection fails as before; it is not run twice.
"""

from collections.abc import Callable
from typing import TypeVar

from django.db import InterfaceError, OperationalError, connections

T = TypeVar("T")


def read_checking_connection(read: Callable[[], T], using: str) -> T:
    """``read()`` (which only reads, on the database ``using``), standing in for
    Django's health check of the connection when one is due."""
    connection = connections[using]
    # Django's own attributes (BaseDatabaseWrapper, since 4.1), not in the stubs.
    due = (
        getattr(connection, "health_check_enabled", False)
        and not getattr(connection, "health_check_done", True)
        and connection.connection is not None
        and not connection.in_atomic_block
    )
    if not due:
        return read()
    connection.health_check_done = True  # type: ignore[attr-defined]
    try:
        return read()
    except (OperationalError, InterfaceError):
        if connection.is_usable():  # the database refused the read: not a dead connection
            raise
    connection.close()  # dead while idle: what Django's check would have found
    return read()

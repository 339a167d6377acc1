"""What captured SQL statements are: reads or writes (``CaptureQueriesContext``'s dicts, or
those of ``django_assert_num_queries``)."""

from collections.abc import Iterable
from typing import Any

#: Statements that change rows, or open a transaction or a savepoint to do so.
WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "SAVEPOINT", "BEGIN")
#: Statements that only read: a SELECT, or a recursive walk (``WITH RECURSIVE ... SELECT``).
READS = ("SELECT", "WITH")


def statements(queries: Iterable[dict[str, Any]], kinds: tuple[str, ...]) -> list[str]:
    """The SQL of the ``queries`` that start with one of ``kinds``."""
    return [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith(kinds)]


def only_reads(queries: Iterable[dict[str, Any]]) -> bool:
    """True when every one of ``queries`` is a read."""
    queries = list(queries)
    return len(statements(queries, READS)) == len(queries)

"""What captured SQL statements are: reads or writes (``CaptureQueriesContext``'s dicts, or
those of ``django_assert_num_queries``)."""

import re
from collections.abc import Iterable
from typing import Any

#: Statements that change rows, or open a transaction or a savepoint to do so.
WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "SAVEPOINT", "BEGIN")
#: Statements that only read: a SELECT, or a recursive walk (``WITH RECURSIVE ... SELECT``).
READS = ("SELECT", "WITH")


# A statement whose WITH holds an INSERT, UPDATE or DELETE (PostgreSQL's data-modifying
# WITH) is that write, not a read.
_MODIFYING_WITH = re.compile(r"\s*WITH\b[^(]*\(\s*(INSERT|UPDATE|DELETE)\b", re.IGNORECASE)


def verb(sql: str) -> str:
    """``sql`` upper-cased from its first word, or from the write a WITH opens with."""
    modifying = _MODIFYING_WITH.match(sql)
    return (modifying.group(1) if modifying else sql.lstrip()).upper()


def statements(queries: Iterable[dict[str, Any]], kinds: tuple[str, ...]) -> list[str]:
    """The SQL of the ``queries`` that start with one of ``kinds``."""
    return [q["sql"] for q in queries if verb(q["sql"]).startswith(kinds)]


def only_reads(queries: Iterable[dict[str, Any]]) -> bool:
    """True when every one of ``queries`` is a read."""
    queries = list(queries)
    return len(statements(queries, READS)) == len(queries)

"""API key scopes: what a key may do, and which scope each operation needs.

A key holds a subset of :data:`SCOPES`, stored as one boolean column per scope on the
key's row (``scope_read``...). Booleans travel with the row the API's one key lookup
loads, so checking a scope costs no query, and the admin filters on them as on any
boolean. :mod:`usergroups.auth.permissions` decides, from these, whether a request may go on.
"""

from collections.abc import Iterable

READ = "read"
WRITE = "write"
ROTATE = "rotate"
EMBED = "embed"

#: Every scope, in the order the docs, the admin and the commands list them.
SCOPES: tuple[str, ...] = (READ, WRITE, ROTATE, EMBED)


def field_name(scope: str) -> str:
    """The APIKey boolean column that holds ``scope``."""
    return f"scope_{scope}"


def parse_scopes(text: str) -> frozenset[str]:
    """The scopes of a comma-separated list such as ``read,embed``.

    Raises ValueError naming the unknown ones, or when the list names none: a key
    that may do nothing is a mistake, not a choice.
    """
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = sorted(set(names) - set(SCOPES))
    if unknown:
        raise ValueError(
            f"Unknown scope(s): {', '.join(unknown)}. Choose among: {', '.join(SCOPES)}."
        )
    if not names:
        raise ValueError(f"Name at least one scope among: {', '.join(SCOPES)}.")
    return frozenset(names)


def ordered(scopes: Iterable[str]) -> list[str]:
    """``scopes`` in the order of :data:`SCOPES`."""
    held = set(scopes)
    return [scope for scope in SCOPES if scope in held]

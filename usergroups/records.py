"""``GroupRecord``: a user group as every service returns it, whole and immutable.

Every group operation of :mod:`usergroups.services.groups` (get, create, the re-read of
a lost insert race, update, rotate, delete, list) and the group-token side
(:mod:`usergroups.group_token_auth`) return one; the serializers, the signals'
receivers and :mod:`usergroups.variables` read only it. It holds all they read, so
reading it never costs a query:

- ``mapping``: schema id -> data source id, in one order on every path and database:
  by schema id, in code point order.
- ``token``: unsealed from the sealed column it carries, at each access (microseconds,
  no query); None when no configured secret opens it. It is not a field: the record's
  repr and equality never show a token.

A new attribute of groups becomes a field here, and a column in :data:`RECORD_FIELDS`
when it is stored on the group's row.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from . import crypto
from .models import UserGroup

#: The ``UserGroup`` columns a record is read from, in this order; the group statements
#: of :mod:`usergroups.sql` select them so, then ``schema_id`` and ``data_source_id``.
RECORD_FIELDS = (
    "team_id",
    "workspace_id",
    "provided_id",
    "name",
    "properties",
    "token_digest",
    "token_sealed",
    "created_at",
    "updated_at",
    "token_rotated_at",
)
_COUNT = len(RECORD_FIELDS)


@dataclass(frozen=True, slots=True)
class GroupRecord:
    team_id: int
    workspace_id: int
    provided_id: str
    name: str
    properties: dict[str, Any] | None
    token_digest: str = field(repr=False)
    token_sealed: str = field(repr=False)
    created_at: datetime
    updated_at: datetime
    token_rotated_at: datetime | None
    mapping: dict[str, str]

    @property
    def token(self) -> str | None:
        """The current token, unsealed with the server secret; None if none opens it."""
        return crypto.unseal_token(self.token_sealed, self.token_digest)

    @classmethod
    def from_values(
        cls, values: Sequence[Any], mapping: Iterable[tuple[str, str]]
    ) -> "GroupRecord":
        """The record of a group whose :data:`RECORD_FIELDS` are ``values``, in order,
        and whose mapping is ``mapping``'s ``(schema id, data source id)`` pairs."""
        fields = dict(zip(RECORD_FIELDS, values, strict=True))
        # Sorted here, not only by the SQL: a database's collation may order otherwise.
        return cls(**fields, mapping=dict(sorted(mapping)))

    @classmethod
    def from_model(cls, group: UserGroup, mapping: Iterable[tuple[str, str]]) -> "GroupRecord":
        """The record of a loaded ``group`` whose mapping is ``mapping``'s pairs."""
        return cls.from_values([getattr(group, name) for name in RECORD_FIELDS], mapping)

    @classmethod
    def from_rows(cls, rows: Sequence[Sequence[Any]]) -> "GroupRecord | None":
        """The record of the first group in ``rows``, as the group statements of
        :mod:`usergroups.sql` return them (one row per mapping entry, at least one row
        per group); None for no rows."""
        if not rows:
            return None
        first = rows[0]
        team_id = first[0]
        pairs = [
            (row[_COUNT], row[_COUNT + 1])
            for row in rows
            if row[0] == team_id and row[_COUNT] is not None
        ]
        return cls.from_values(first[:_COUNT], pairs)

"""``GroupRecord``: a user group as every service returns it, whole and immutable.

Every group operation of :mod:`usergroups.services.groups` (get, create, the re-read of
a lost insert race, update, rotate, delete, list) and the group-token side
(:mod:`usergroups.auth.group_token`) return one; the serializers, the signals'
receivers and :mod:`usergroups.contrib.variables` read only it. It holds all they read, so
reading it never costs a query:

- ``mapping``: schema id -> data source id, in one order on every path and database:
  by schema id, in code point order.
- ``parent_id`` (the stored column) and ``parent_user_group_id`` (the parent's
  ``provided_id``), and ``computed_properties`` / ``computed_mapping``: the ancestors'
  properties and mappings merged from the root down, then the group's own (a top-level
  key of a deeper group wins; ``None`` properties add nothing), and
  ``computed_property_sources``: for each top-level key of ``computed_properties``, the
  ``provided_id`` of the group (this one or an ancestor) whose value it holds, found in
  the same merge; ``ancestor_ids``: the ancestors' ``team_id``, root first. A child's record is
  built with its :data:`Ancestor` chain, read in the same query as the group
  (:mod:`usergroups.services.lineage`).
- ``token``: unsealed from the sealed column it carries, at each access (microseconds,
  no query); None when no configured secret opens it. It is not a field: the record's
  repr and equality never show a token.

Every dict and list a record holds is read-only (:mod:`usergroups.frozen`): a record
may be handed to many requests at once (:mod:`usergroups.read_model`).

A new attribute of groups becomes a field here, and a column in :data:`RECORD_FIELDS`
when it is stored on the group's row.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from usergroups import crypto
from usergroups.frozen import freeze
from usergroups.models import UserGroup


def group_source(provided_id: str) -> str:
    """How a grant names the group that gave a variable: ``"user_group:<provided_id>"``."""
    return f"user_group:{provided_id}"


class Ancestor(NamedTuple):
    """One group above a record's group: what the record inherits from it."""

    team_id: int
    provided_id: str
    properties: dict[str, Any] | None
    mapping: dict[str, str]


#: The ``UserGroup`` fields a record holds as they are stored.
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
    "parent_id",
    "embed_generation",
)


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
    parent_id: int | None
    #: What embed tokens of the group must carry to verify (see services.embed).
    embed_generation: int
    mapping: dict[str, str]
    parent_user_group_id: str | None
    computed_properties: dict[str, Any]
    computed_mapping: dict[str, str]
    #: Top-level key of ``computed_properties`` -> ``provided_id`` of the group that set it.
    computed_property_sources: dict[str, str]
    #: The ancestors' ``team_id``, root first (empty for a root).
    ancestor_ids: tuple[int, ...] = ()
    #: ``computed_property_sources`` as a grant names them (:func:`group_source`): the
    #: ``variable_sources`` of every grant of the group that no person or param layers.
    variable_sources: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def token(self) -> str | None:
        """The current token, unsealed with the server secret; None if none opens it."""
        return crypto.unseal_token(self.token_sealed, self.token_digest)

    @classmethod
    def from_model(
        cls,
        group: UserGroup,
        mapping: Iterable[tuple[str, str]],
        ancestors: Sequence[Ancestor] = (),
    ) -> "GroupRecord":
        """The record of a loaded ``group`` whose mapping is ``mapping``'s ``(schema id,
        data source id)`` pairs, and whose ancestors are ``ancestors``, root first (the
        last one is the parent). Called by :mod:`usergroups.services.lineage` alone."""
        fields = {name: getattr(group, name) for name in RECORD_FIELDS}
        fields["properties"] = freeze(fields["properties"])
        # Sorted here, not by the database: its collation may order otherwise.
        own_mapping = dict(sorted(mapping))
        if (fields["parent_id"] is None) != (not ancestors):
            raise ValueError("A record of a child group needs its ancestors, and only it.")
        computed_properties: dict[str, Any] = {}
        computed_mapping: dict[str, str] = {}
        sources: dict[str, str] = {}
        levels = [*((a.provided_id, freeze(a.properties)) for a in ancestors)]
        levels.append((fields["provided_id"], fields["properties"]))
        for provided_id, properties in levels:
            for key, value in (properties or {}).items():
                computed_properties[key] = value
                sources[key] = provided_id
        for ancestor in ancestors:
            computed_mapping.update(ancestor.mapping)
        computed_mapping.update(own_mapping)
        return cls(
            **fields,
            mapping=freeze(own_mapping),
            parent_user_group_id=ancestors[-1].provided_id if ancestors else None,
            computed_properties=freeze(computed_properties),
            computed_mapping=freeze(dict(sorted(computed_mapping.items()))),
            computed_property_sources=freeze(sources),
            variable_sources=freeze({key: group_source(pid) for key, pid in sources.items()}),
            ancestor_ids=tuple(ancestor.team_id for ancestor in ancestors),
        )

"""The group hierarchy: what a child inherits, and the rules a parent must keep.

A group may have a parent in its workspace; a group without one is at level 1, and
``USERGROUPS["MAX_HIERARCHY_DEPTH"]`` bounds the levels. Every change that could break
those rules (a create with a parent, a move, a delete) first locks the workspace's row,
so such changes of one workspace run one after the other on any number of processes:
two moves that would make a cycle together cannot both pass their checks, each check
reading what the one before it committed. Reads take no lock.

Used by :mod:`usergroups.services.groups`, which owns every write.
"""

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connections, router
from django.utils.translation import gettext_lazy as _

from usergroups import sql
from usergroups.conf import usergroups_settings
from usergroups.models import UserGroup, Workspace
from usergroups.records import (
    DISTANCE_INDEX,
    PARENT_INDEX,
    PROPERTIES_INDEX,
    PROVIDED_ID_INDEX,
    SCHEMA_INDEX,
    Ancestor,
    GroupRecord,
)


class InvalidParent(Exception):
    """A parent the hierarchy's rules refuse; ``str()`` says why, for the caller."""


def ancestors_of(team_ids: Iterable[int]) -> dict[int, list[Ancestor]]:
    """Each of ``team_ids`` with its ancestors, root first (the group itself is last):
    one query for any number of ids, none for no ids."""
    ids = sorted(set(team_ids))
    if not ids:
        return {}
    chains: dict[int, list[Ancestor]] = {team_id: [] for team_id in ids}
    last: tuple[int, int] | None = None
    for (
        start_id,
        distance,
        team_id,
        provided_id,
        properties,
        schema_id,
        source,
    ) in sql.ANCESTORS.fetch(ids)[1]:
        chain = chains[start_id]
        if (start_id, distance) != last:
            chain.append(Ancestor(team_id, provided_id, properties, {}))
            last = (start_id, distance)
        if schema_id is not None:
            chain[-1].mapping[schema_id] = source
    return chains


def record_from_rows(rows: Sequence[Sequence[Any]]) -> GroupRecord | None:
    """The record of the group statement's ``rows`` (see ``GroupRecord.from_rows``), with
    its ancestors read by one more query when it has a parent. None for no rows, or when
    the parent is gone before it is read (deleted with the group meanwhile)."""
    if not rows:
        return None
    parent_id = rows[0][PARENT_INDEX]
    if parent_id is None:
        return GroupRecord.from_rows(rows)
    chain = ancestors_of([parent_id]).get(parent_id)
    if not chain:
        return None
    return GroupRecord.from_rows(rows, chain)


def record_from_lineage(rows: Sequence[Sequence[Any]]) -> GroupRecord | None:
    """The record of a lineage statement's ``rows`` (the group at distance 0, then its
    ancestors, each with its mapping entries); None for no rows, or for a chain that
    does not reach a root (a corrupted hierarchy, cut by the walk's limit)."""
    if not rows:
        return None
    own: list[Sequence[Any]] = []
    chain: list[Ancestor] = []
    parent_id = rows[0][PARENT_INDEX]
    for row in rows:
        if row[DISTANCE_INDEX] == 0:
            own.append(row[:DISTANCE_INDEX])
            continue
        if not chain or chain[-1].team_id != row[0]:
            if row[0] != parent_id:
                return None
            chain.append(Ancestor(row[0], row[PROVIDED_ID_INDEX], row[PROPERTIES_INDEX], {}))
            parent_id = row[PARENT_INDEX]
        if row[SCHEMA_INDEX] is not None:
            chain[-1].mapping[row[SCHEMA_INDEX]] = row[SCHEMA_INDEX + 1]
    if parent_id is not None:
        return None
    chain.reverse()
    return GroupRecord.from_rows(own, chain)


def read_group(statement: sql.Statement, params: list[Any]) -> GroupRecord | None:
    """The group ``statement`` finds with ``params``, whole: one query with a lineage
    statement; with a group statement (a locking read), two for a child."""
    rows = statement.fetch(params)[1]
    if isinstance(statement, sql.LineageStatement):
        return record_from_lineage(rows)
    return record_from_rows(rows)


def lock_workspace(workspace_id: int) -> None:
    """Lock the workspace's row until the transaction ends: the hierarchy changes of one
    workspace queue here. PostgreSQL's ``FOR NO KEY UPDATE`` leaves inserts of groups
    (whose foreign key takes a key-share lock on the row) free to go on meanwhile."""
    connection = connections[router.db_for_write(Workspace)]
    no_key = connection.features.has_select_for_no_key_update
    rows = Workspace.objects.select_for_update(no_key=no_key).filter(pk=workspace_id)
    list(rows.order_by().values_list("pk", flat=True))


def parent_chain(workspace_id: int, parent_provided_id: str) -> list[Ancestor]:
    """The would-be parent named by ``parent_provided_id`` and its ancestors, root first;
    :class:`InvalidParent` if the workspace has no such group. Two queries."""
    parent_id = (
        UserGroup.objects.filter(workspace_id=workspace_id, provided_id=parent_provided_id)
        .values_list("team_id", flat=True)
        .first()
    )
    if parent_id is None:
        raise InvalidParent(_("No user group of this workspace has this id."))
    return ancestors_of([parent_id])[parent_id]


def subtree(team_id: int) -> list[tuple[int, int]]:
    """``(team_id, level below the group: 1 for the group itself)`` of the group and
    every descendant, the group first: one query."""
    return [(row[1], row[2]) for row in sql.DESCENDANTS.fetch([team_id])[1]]


def check_depth(chain: Sequence[Ancestor], height: int = 1) -> None:
    """:class:`InvalidParent` unless a subtree ``height`` levels high (1 for a group
    alone) fits under the parent whose chain (root first) is ``chain``."""
    limit = usergroups_settings.MAX_HIERARCHY_DEPTH
    if len(chain) + height > limit:
        raise InvalidParent(
            _("The hierarchy would be %(depth)s levels deep; at most %(limit)s are allowed.")
            % {"depth": len(chain) + height, "limit": limit}
        )


def check_move(team_id: int, chain: Sequence[Ancestor], height: int) -> None:
    """:class:`InvalidParent` if putting group ``team_id`` (its subtree ``height``
    levels high) under the parent of ``chain`` makes a cycle or too deep a hierarchy."""
    if any(ancestor.team_id == team_id for ancestor in chain):
        raise InvalidParent(_("A group cannot be put under itself or one of its descendants."))
    check_depth(chain, height)

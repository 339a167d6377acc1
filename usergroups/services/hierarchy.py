"""The group hierarchy: the rules a parent must keep.

A group may have a parent in its workspace; a group without one is at level 1, and
``USERGROUPS["MAX_HIERARCHY_DEPTH"]`` bounds the levels. Every change that could break
those rules (a create with a parent, a move, a delete) first locks the workspace's row,
so such changes of one workspace run one after the other on any number of processes:
two moves that would make a cycle together cannot both pass their checks, each check
reading what the one before it committed. Reads take no lock.

Used by :mod:`usergroups.services.groups`, which owns every write; the walks up and
down the hierarchy are :mod:`usergroups.services.lineage`'s.
"""

from collections.abc import Sequence

from django.db import connections, router
from django.utils.translation import gettext_lazy as _

from usergroups.conf import usergroups_settings
from usergroups.models import UserGroup, Workspace
from usergroups.records import Ancestor
from usergroups.services import lineage


class InvalidParent(Exception):
    """A parent the hierarchy's rules refuse; ``str()`` says why, for the caller."""


class UnknownParent(InvalidParent):
    """The parent named is no group of the workspace."""


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
    :class:`UnknownParent` if the workspace has no such group. Two queries."""
    parent_id = (
        UserGroup.objects.filter(workspace_id=workspace_id, provided_id=parent_provided_id)
        .values_list("team_id", flat=True)
        .first()
    )
    if parent_id is None:
        raise UnknownParent(_("No user group of this workspace has this id."))
    return lineage.ancestors_of([parent_id])[parent_id]


def check_depth(chain: Sequence[Ancestor], height: int = 1) -> None:
    """:class:`InvalidParent` unless a subtree ``height`` levels high (1 for a group
    alone) fits under the parent whose chain (root first) is ``chain``."""
    limit = usergroups_settings.MAX_HIERARCHY_DEPTH
    if len(chain) + height > limit:
        raise InvalidParent(
            _("The hierarchy would be %(depth)s levels deep; at most %(limit)s are allowed.")
            % {"depth": len(chain) + height, "limit": limit}
        )


def check_parent(
    chain: Sequence[Ancestor], team_id: int | None = None, parent_id: int | None = None
) -> None:
    """:class:`InvalidParent` unless group ``team_id`` (None: a group being created), now
    under ``parent_id``, may go under the parent whose chain (root first) is ``chain``:
    staying is allowed, whatever the bound says now. The service checks it with the
    workspace locked; the admin's form, before anything is saved."""
    if chain[-1].team_id == parent_id:
        return
    if team_id is None:
        check_depth(chain)
    else:
        height = max(level for _team_id, level in lineage.subtree(team_id))
        check_move(team_id, chain, height)


def check_move(team_id: int, chain: Sequence[Ancestor], height: int) -> None:
    """:class:`InvalidParent` if putting group ``team_id`` (its subtree ``height``
    levels high) under the parent of ``chain`` makes a cycle or too deep a hierarchy."""
    if any(ancestor.team_id == team_id for ancestor in chain):
        raise InvalidParent(_("A group cannot be put under itself or one of its descendants."))
    check_depth(chain, height)

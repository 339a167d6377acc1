"""User groups: every write to a group and its mapping, and the reads that answer with one.

The API, the admin, the management commands and host code all change groups through
here, so every change is made the same way from every door: in one transaction, logged
by ``team_id`` (never with a token), and announced after commit by the signals of
:mod:`usergroups.signals` with the :class:`~usergroups.records.GroupRecord` it returns.
Every function that answers with a group returns a ``GroupRecord``; none returns a
model instance.

Get-or-create and rotation are race-safe on any number of processes: a unique
constraint decides concurrent creations, a compare-and-swap on the token's digest
decides concurrent rotations. Hierarchy changes (a create with a parent, a move, a
delete) queue on the workspace's row: see :mod:`.hierarchy`.
"""

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, router
from django.db.models import F, QuerySet
from django.db.models.functions import Left
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from usergroups import crypto, read_model, scopes, telemetry
from usergroups.conf import usergroups_settings
from usergroups.logs import get_logger
from usergroups.models import SchemaMapping, UserGroup
from usergroups.read_model import reads
from usergroups.records import Ancestor, GroupRecord
from usergroups.services import audit, hierarchy, lineage
from usergroups.services.hierarchy import InvalidParent, UnknownParent
from usergroups.services.retry import retry_on_deadlock
from usergroups.signals import (
    group_created,
    group_deleted,
    group_moved,
    group_updated,
    send_on_commit,
    token_rotated,
)

__all__ = ["HasChildren", "InvalidParent", "ProvidedIdTaken", "UnknownParent"]

logger = get_logger(__name__)


class ProvidedIdTaken(Exception):
    """A rename to a ``user_group_id`` another group of the workspace already has."""


class HasChildren(Exception):
    """A delete, without ``cascade``, of a group that has child groups."""

    def __init__(self, descendants: int) -> None:
        super().__init__(descendants)
        self.descendants = descendants


def _atomic(*, savepoint: bool = True) -> AbstractContextManager[None]:
    return read_model.writing(router.db_for_write(UserGroup), savepoint=savepoint)


def find_group(workspace_id: int, provided_id: str) -> GroupRecord | None:
    """The group of ``provided_id`` in the workspace, or None: one query at any depth,
    none on PostgreSQL for a group found before (:mod:`usergroups.read_model`)."""
    return reads.GROUP(
        (workspace_id, provided_id),
        lambda using: lineage.find_group(
            lineage.BY_PROVIDED_ID, workspace_id, provided_id, using=using
        ),
    )


def _replace_mapping(group: UserGroup, mapping: dict[str, str]) -> None:
    group.mappings.all().delete()
    SchemaMapping.objects.bulk_create(
        SchemaMapping(group=group, schema_id=schema_id, data_source_id=source)
        for schema_id, source in mapping.items()
    )


@retry_on_deadlock
@sensitive_variables("token")
def create_group(
    workspace_id: int,
    provided_id: str,
    name: str,
    mapping: dict[str, str],
    properties: dict[str, Any] | None,
    parent_user_group_id: str | None = None,
) -> GroupRecord:
    """Insert a group and its mappings in one transaction, all or nothing (a savepoint
    inside the caller's, so a duplicate leaves it usable); IntegrityError on a duplicate,
    :class:`InvalidParent` when the parent named is unknown or already at the deepest
    level (and then nothing is written)."""
    token = crypto.new_group_token()
    group = UserGroup(
        workspace_id=workspace_id, provided_id=provided_id, name=name, properties=properties
    )
    group.set_token(token)
    chain: list[Ancestor] = []
    with _atomic():
        if parent_user_group_id is not None:
            hierarchy.lock_workspace(workspace_id)
            chain = hierarchy.parent_chain(workspace_id, parent_user_group_id)
            hierarchy.check_parent(chain)
            group.parent_id = chain[-1].team_id
        group.save(force_insert=True)
        SchemaMapping.objects.bulk_create(
            SchemaMapping(group=group, schema_id=schema_id, data_source_id=source)
            for schema_id, source in mapping.items()
        )
        audit.record(
            workspace_id,
            audit.USER_GROUP_CREATED,
            user_group_id=provided_id,
            details={
                "team_id": group.team_id,
                "name": name,
                "parent_user_group_id": parent_user_group_id,
            },
        )
    record = lineage.record_of(group, mapping.items(), chain)
    send_on_commit(group_created, group=record)
    logger.info("Created user group team_id=%s in workspace %s", record.team_id, workspace_id)
    return record


# Tries of an insert (get-or-create) or a rename that meets a group holding its id, when
# each time that group is gone before it can be read: the id was freed meanwhile.
ATTEMPTS_WHEN_GONE = 5


def get_or_create_group(
    workspace_id: int,
    provided_id: str,
    name: str | None = None,
    mapping: dict[str, str] | None = None,
    properties: dict[str, Any] | None = None,
    parent_user_group_id: str | None = None,
    authorize: Callable[[str], None] | None = None,
) -> tuple[GroupRecord, bool]:
    """The group of ``provided_id``, created if it does not exist; ``(group, created)``.

    A known group is returned as stored, whatever the other arguments say. Two callers
    racing to create one id meet at the unique constraint: the loser reads the winner.
    If the winner is gone before the loser reads it (deleted or renamed meanwhile), the
    id is free again: the loser tries again, :data:`ATTEMPTS_WHEN_GONE` times in all.

    ``authorize``, when given, is called with the scope the call turns out to need
    (:data:`~usergroups.scopes.READ` before returning a group that exists,
    :data:`~usergroups.scopes.WRITE` before creating one) and raises to refuse: a caller
    that may not create gets nothing made.
    """
    group, created = _get_or_create(
        workspace_id, provided_id, name, mapping, properties, parent_user_group_id, authorize
    )
    telemetry.got_or_created(workspace_id, created=created)
    return group, created


def _get_or_create(
    workspace_id: int,
    provided_id: str,
    name: str | None,
    mapping: dict[str, str] | None,
    properties: dict[str, Any] | None,
    parent_user_group_id: str | None,
    authorize: Callable[[str], None] | None,
) -> tuple[GroupRecord, bool]:
    check = authorize or _allow
    error: IntegrityError | None = None
    for _attempt in range(ATTEMPTS_WHEN_GONE):
        group = find_group(workspace_id, provided_id)
        if group is not None:
            check(scopes.READ)
            return group, False
        check(scopes.WRITE)
        try:
            return create_group(
                workspace_id,
                provided_id,
                name if name is not None else provided_id,
                mapping or {},
                properties,
                parent_user_group_id,
            ), True
        except IntegrityError as exc:
            error = exc
        winner = read_race_winner(workspace_id, provided_id)
        if winner is not None:
            check(scopes.READ)
            return winner, False
        logger.info("The group that won an insert race was gone before it was read; retrying")
    # Never a winner to read: the insert fails for another reason (e.g. a mapping row);
    # report that error, not a missing group.
    assert error is not None
    raise error


def _allow(scope: str) -> None:
    """Host code and the admin may do anything: no scope to check."""


@retry_on_deadlock
def read_race_winner(workspace_id: int, provided_id: str) -> GroupRecord | None:
    """The winner of a lost insert race, read with a locking read, which sees the latest
    committed row even inside a REPEATABLE READ transaction (MySQL, MariaDB). None if
    the winner is gone again (deleted, or renamed)."""
    with _atomic():
        group = (
            UserGroup.objects.select_for_update()
            .filter(workspace_id=workspace_id, provided_id=provided_id)
            .order_by()
            .first()
        )
        if group is None:
            return None
        pairs = list(
            SchemaMapping.objects.select_for_update()
            .filter(group=group)
            .order_by()
            .values_list("schema_id", "data_source_id")
        )
        try:
            return lineage.record_with_parent(group, pairs)
        except ValueError:  # the parent went with the group's deletion meanwhile: a 404
            return None


@sensitive_variables("current_token")
def rotate_token(workspace_id: int, current_token: str) -> GroupRecord | None:
    """Give the group holding ``current_token`` a new token; None if no group holds it.

    The update is a compare-and-swap on the old digest, so of any number of concurrent
    rotations of one token exactly one wins. The returned group's ``token`` is the new one.
    """
    if not crypto.looks_like_group_token(current_token):
        return None
    return _rotate_digest(workspace_id, crypto.digest(current_token))


# Retried with the digest, not the token: the retry's frame holds its arguments, and
# only a function marked with sensitive_variables has them hidden from error reports.
@retry_on_deadlock
def _rotate_digest(workspace_id: int, old_digest: str) -> GroupRecord | None:
    return _swap_token(workspace_id, old_digest)


def rotate_group_token(group: UserGroup | GroupRecord) -> GroupRecord | None:
    """Rotate the token ``group`` holds now (as loaded); None if it changed meanwhile."""
    return _swap_token(group.workspace_id, group.token_digest)


@sensitive_variables("token")
def _swap_token(workspace_id: int, old_digest: str) -> GroupRecord | None:
    """The compare-and-swap of the group of the workspace whose digest is ``old_digest``:
    the group's read, then one UPDATE by its id that applies only if the digest is still
    ``old_digest`` (one statement: atomic by itself)."""
    group = lineage.find_group(lineage.BY_TOKEN_DIGEST, workspace_id, old_digest)
    if group is None:
        return None
    token = crypto.new_group_token()
    token_digest = crypto.digest(token)
    token_sealed = crypto.seal_token(token, token_digest)
    now = timezone.now()
    grace = usergroups_settings.ROTATION_GRACE_SECONDS
    values = {
        # Embed tokens minted before go with the old token (CONTRACT section 6); the
        # swap advances embed_generation too.
        "embed_tokens_revoked_at": now,
        "token_digest": token_digest,
        "token_sealed": token_sealed,
        "token_rotated_at": now,
        "updated_at": now,
        "previous_token_digest": old_digest if grace else None,
        "previous_token_valid_until": now + timedelta(seconds=grace) if grace else None,
    }
    # The swap and its event commit together. No savepoint inside a caller's transaction:
    # the UPDATE cannot fail for bad input, and a failure spoils the caller's anyway.
    with _atomic(savepoint=False):
        swapped = UserGroup.objects.filter(pk=group.team_id, token_digest=old_digest).update(
            embed_generation=F("embed_generation") + 1, **values
        )
        if not swapped:
            return None
        audit.record(
            workspace_id,
            audit.USER_GROUP_TOKEN_ROTATED,
            user_group_id=group.provided_id,
            details={"team_id": group.team_id, "grace_seconds": grace},
        )
    rotated = replace(
        group,
        token_digest=token_digest,
        token_sealed=token_sealed,
        token_rotated_at=now,
        updated_at=now,
        embed_generation=group.embed_generation + 1,  # unless a revocation came between
    )
    send_on_commit(token_rotated, group=rotated)
    logger.info("Rotated the token of user group team_id=%s", rotated.team_id)
    telemetry.rotated("group_token", workspace_id)
    return rotated


def update_group(
    workspace_id: int, provided_id: str, changes: dict[str, Any]
) -> GroupRecord | None:
    """Apply ``changes`` (name, properties, mapping, provided_id, parent_user_group_id)
    to a group; None if unknown.

    Given fields replace what is stored (a given mapping replaces the whole mapping);
    absent ones stay. The row is locked for the transaction, so concurrent updates queue.
    A rename to an id the workspace already has raises :class:`ProvidedIdTaken`; a parent
    the hierarchy refuses (unknown, a cycle, too deep), :class:`InvalidParent`. A new
    parent (a provided id, or None to detach) moves the group with its subtree.
    """
    groups = UserGroup.objects.filter(workspace_id=workspace_id, provided_id=provided_id)
    return _update(groups, changes, workspace_id)


def update_group_by_team_id(team_id: int, changes: dict[str, Any]) -> GroupRecord | None:
    """:func:`update_group` for the group of ``team_id`` (the admin's door)."""
    return _update(UserGroup.objects.filter(pk=team_id), changes)


_UPDATABLE = ("name", "properties", "provided_id")


def _update(
    groups: QuerySet[UserGroup], changes: dict[str, Any], workspace_id: int | None = None
) -> GroupRecord | None:
    """A rename that meets a group holding its new id raises :class:`ProvidedIdTaken`; if
    that group is gone by the time it is looked for, the id was freed meanwhile and the
    update runs again (:data:`ATTEMPTS_WHEN_GONE` times in all)."""
    error: IntegrityError | None = None
    for _attempt in range(ATTEMPTS_WHEN_GONE):
        try:
            updated = update_locked(groups, changes, workspace_id)
            break
        except IntegrityError as exc:
            if "provided_id" not in changes:
                raise  # not a rename: a bug, not bad input
            if _provided_id_taken(groups, changes["provided_id"]):
                raise ProvidedIdTaken(changes["provided_id"]) from None
            error = exc
    else:
        assert error is not None
        raise error  # the id was never found taken: the update fails for another reason
    if updated is None:
        return None
    record, old_parent_id = updated
    send_on_commit(group_updated, group=record)
    if old_parent_id != record.parent_id:
        send_on_commit(
            group_moved, group=record, old_parent_id=old_parent_id, new_parent_id=record.parent_id
        )
        logger.info(
            "Moved user group team_id=%s from parent %s to %s",
            record.team_id,
            old_parent_id,
            record.parent_id,
        )
    logger.info("Updated user group team_id=%s", record.team_id)
    return record


@retry_on_deadlock
def update_locked(
    groups: QuerySet[UserGroup], changes: dict[str, Any], workspace_id: int | None
) -> tuple[GroupRecord, int | None] | None:
    """The updated group (of ``workspace_id``, when known) and its parent's id before."""
    moving = "parent_user_group_id" in changes
    with _atomic():
        if moving:
            # The workspace's row first, then the group's: the order every hierarchy
            # change locks in (see hierarchy), so two of them never deadlock.
            if workspace_id is None:
                workspace_id = groups.values_list("workspace_id", flat=True).first()
            if workspace_id is None:
                return None
            hierarchy.lock_workspace(workspace_id)
        group = groups.select_for_update().first()
        if group is None:
            return None
        old_parent_id = group.parent_id
        old_provided_id = group.provided_id
        if moving:
            group.parent_id = _new_parent_id(group, changes["parent_user_group_id"])
        for field in _UPDATABLE:
            if field in changes:
                setattr(group, field, changes[field])
        fields = [f for f in _UPDATABLE if f in changes]
        if group.parent_id != old_parent_id:
            fields.append("parent")
        group.save(update_fields=[*fields, "updated_at"])
        if "mapping" in changes:
            _replace_mapping(group, changes["mapping"])
        record = lineage.find_group(lineage.BY_TEAM_ID, group.team_id)
        assert record is not None  # read in the transaction that holds the row's lock
        _record_update(record, changes, old_provided_id, old_parent_id)
    return record, old_parent_id


# The changes' names as the API spells them, for the event's ``fields``.
_FIELD_NAMES = {
    "name": "name",
    "properties": "properties",
    "provided_id": "user_group_id",
    "mapping": "mapping",
}


def _record_update(
    record: GroupRecord, changes: dict[str, Any], old_provided_id: str, old_parent_id: int | None
) -> None:
    """The events of an update: ``updated`` naming the fields given (if any besides the
    parent), ``moved`` if the parent changed."""
    fields = [api_name for name, api_name in _FIELD_NAMES.items() if name in changes]
    if fields:
        details: dict[str, Any] = {"team_id": record.team_id, "fields": fields}
        if record.provided_id != old_provided_id:
            details["previous_user_group_id"] = old_provided_id
        audit.record(
            record.workspace_id,
            audit.USER_GROUP_UPDATED,
            user_group_id=record.provided_id,
            details=details,
        )
    if record.parent_id != old_parent_id:
        old_parent = None
        if old_parent_id is not None:
            old_parent = (
                UserGroup.objects.filter(pk=old_parent_id)
                .values_list("provided_id", flat=True)
                .first()
            )
        audit.record(
            record.workspace_id,
            audit.USER_GROUP_MOVED,
            user_group_id=record.provided_id,
            details={
                "team_id": record.team_id,
                "from_parent_user_group_id": old_parent,
                "to_parent_user_group_id": record.parent_user_group_id,
            },
        )


def _new_parent_id(group: UserGroup, parent_user_group_id: str | None) -> int | None:
    """The team id of the parent ``group`` may move under (None: detached, always
    allowed); :class:`InvalidParent` if the hierarchy's rules refuse it. Runs with the
    workspace's row locked, so what it checks stays true until the commit."""
    if parent_user_group_id is None:
        return None
    chain = hierarchy.parent_chain(group.workspace_id, parent_user_group_id)
    hierarchy.check_parent(chain, group.team_id, group.parent_id)
    return chain[-1].team_id


def provided_id_taken(workspace_id: int, provided_id: str, other_than: int | None = None) -> bool:
    """Whether a group of the workspace (other than the group ``other_than``) holds
    ``provided_id`` now. The admin's form asks before saving; a rename asks after the
    unique constraint refused it."""
    holders = UserGroup.objects.filter(workspace_id=workspace_id, provided_id=provided_id)
    if other_than is not None:
        holders = holders.exclude(pk=other_than)
    return holders.exists()


def _provided_id_taken(groups: QuerySet[UserGroup], new_id: str) -> bool:
    """Whether another group of the workspace holds ``new_id`` now (after a failed rename
    of the group ``groups`` names; False if that group is gone itself)."""
    current = groups.values_list("pk", "workspace_id").first()
    if current is None:
        return False
    team_id, workspace_id = current
    return provided_id_taken(workspace_id, new_id, other_than=team_id)


@sensitive_variables("token")
def delete_group(
    workspace_id: int,
    *,
    provided_id: str | None = None,
    token: str | None = None,
    cascade: bool = False,
) -> list[GroupRecord]:
    """Delete the group named by ``provided_id`` or holding ``token``: the groups deleted,
    as they were, the named one first; empty if unknown.

    A group with children raises :class:`HasChildren` (nothing deleted) unless
    ``cascade``: then it goes with all its descendants, in one transaction.
    """
    groups = UserGroup.objects.filter(workspace_id=workspace_id)
    if provided_id is not None:
        groups = groups.filter(provided_id=provided_id)
    elif token is not None and crypto.looks_like_group_token(token):
        groups = groups.filter(token_digest=crypto.digest(token))
    else:
        return []
    return _delete(groups, cascade, workspace_id)


def delete_group_by_team_id(team_id: int, *, cascade: bool = False) -> list[GroupRecord]:
    """:func:`delete_group` for the group of ``team_id`` (the admin's door)."""
    return _delete(UserGroup.objects.filter(pk=team_id), cascade)


@retry_on_deadlock  # given the digest, never the token (see _rotate_digest)
def _delete(
    groups: QuerySet[UserGroup], cascade: bool, workspace_id: int | None = None
) -> list[GroupRecord]:
    with _atomic():
        if workspace_id is None:
            workspace_id = groups.values_list("workspace_id", flat=True).first()
        if workspace_id is None:
            return []
        # No child may be added (or moved) under the subtree while it is deleted.
        hierarchy.lock_workspace(workspace_id)
        team_id = groups.select_for_update().values_list("pk", flat=True).first()
        if team_id is None:
            return []
        tree = lineage.subtree(team_id)
        if len(tree) > 1 and not cascade:
            raise HasChildren(len(tree) - 1)
        order = {tree_id: index for index, (tree_id, _level) in enumerate(tree)}
        subtree = UserGroup.objects.filter(pk__in=list(order))
        records = sorted(_records(subtree), key=lambda record: order[record.team_id])
        if len(tree) > 1:
            # Detached first: the delete's order within the subtree then does not matter
            # to databases that check foreign keys row by row (MariaDB).
            subtree.update(parent=None)
        subtree.delete()
        # One event per group, the named one first (its descendants name it), in one INSERT.
        audit.record_each(
            workspace_id,
            audit.USER_GROUP_DELETED,
            [
                {
                    "user_group_id": record.provided_id,
                    "details": {"team_id": record.team_id}
                    if record.team_id == team_id
                    else {"team_id": record.team_id, "cascade_of": records[0].provided_id},
                }
                for record in records
            ],
        )
    for record in records:
        send_on_commit(group_deleted, group=record, team_id=record.team_id)
        logger.info("Deleted user group team_id=%s", record.team_id)
    return records


def _listed(
    workspace_id: int, provided_id_prefix: str, parent_user_group_id: str | None = None
) -> QuerySet[UserGroup]:
    groups = UserGroup.objects.filter(workspace_id=workspace_id)
    if provided_id_prefix:
        # Not __startswith: SQLite's LIKE ignores case. Equality is exact everywhere.
        head = Left("provided_id", len(provided_id_prefix))
        groups = groups.annotate(id_head=head).filter(id_head=provided_id_prefix)
    if parent_user_group_id is not None:
        groups = groups.filter(parent__provided_id=parent_user_group_id)
    return groups


def count_groups(
    workspace_id: int, provided_id_prefix: str = "", parent_user_group_id: str | None = None
) -> int:
    """How many groups the workspace has (whose id starts with ``provided_id_prefix``,
    children of ``parent_user_group_id``)."""
    return _listed(workspace_id, provided_id_prefix, parent_user_group_id).count()


def list_groups(
    workspace_id: int,
    provided_id_prefix: str = "",
    *,
    parent_user_group_id: str | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> list[GroupRecord]:
    """The workspace's groups (whose id starts with ``provided_id_prefix``; the direct
    children of ``parent_user_group_id`` when given), oldest first, from ``offset``, at
    most ``limit``: three queries, the groups, their mappings and their ancestors (two
    when none has a parent)."""
    groups = _listed(workspace_id, provided_id_prefix, parent_user_group_id).order_by("team_id")
    stop = None if limit is None else offset + limit
    return _records(groups[offset:stop])


def _records(groups: QuerySet[UserGroup]) -> list[GroupRecord]:
    """The records of ``groups``, in their order: two queries (their ids, then the walk
    of them all), whatever their number and depth."""
    ids = list(groups.values_list("team_id", flat=True))
    records = lineage.find_groups(ids)
    return [records[team_id] for team_id in ids if team_id in records]


def reseal_tokens() -> tuple[int, int]:
    """Reseal every group token with the current secret: ``(resealed, lost)``, where lost
    tokens open with no configured secret (they still work, but cannot be shown)."""
    resealed = lost = 0
    groups = UserGroup.objects.only("team_id", "token_digest", "token_sealed")
    for group in groups.iterator(chunk_size=1000):
        token = crypto.unseal_token(group.token_sealed, group.token_digest)
        if token is None:
            lost += 1
            continue
        sealed = crypto.seal_token(token, group.token_digest)
        if sealed != group.token_sealed:
            UserGroup.objects.filter(pk=group.pk, token_digest=group.token_digest).update(
                token_sealed=sealed
            )
            resealed += 1
    if resealed:
        logger.info("Resealed %s group token(s) with the current secret", resealed)
    return resealed, lost

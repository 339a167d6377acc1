"""Get-or-create and rotation: the two operations, race-safe on any number of processes.

The admin and the API both go through here, so both get the same signals, logging
and guarantees.
"""

import logging
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models.functions import Left
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from . import crypto
from .conf import usergroups_settings
from .conflicts import retry_on_conflict
from .models import SchemaMapping, UserGroup
from .prepared import PreparedSQL
from .signals import send_on_commit, token_rotated

logger = logging.getLogger(__name__)

_GROUP_FIELDS = (
    "team_id",
    "workspace_id",
    "provided_id",
    "name",
    "properties",
    "token_digest",
    "token_sealed",
)


def _columns(model, names, quote_name, table_alias: str) -> tuple[str, list]:
    fields = [model._meta.get_field(name) for name in names]
    sql = ", ".join(f"{table_alias}.{quote_name(field.column)}" for field in fields)
    return sql, fields


def _find_group_sql(quote_name) -> tuple[str, list]:
    group, mapping = UserGroup._meta, SchemaMapping._meta
    group_columns, group_fields = _columns(UserGroup, _GROUP_FIELDS, quote_name, "g")
    mapping_columns, mapping_fields = _columns(
        SchemaMapping, ("schema_id", "data_source_id"), quote_name, "m"
    )
    column = lambda model, name: quote_name(model._meta.get_field(name).column)  # noqa: E731
    sql = (
        f"SELECT {group_columns}, {mapping_columns}"
        f" FROM {quote_name(group.db_table)} g"
        f" LEFT OUTER JOIN {quote_name(mapping.db_table)} m"
        f" ON m.{column(SchemaMapping, 'group')} = g.{column(UserGroup, 'team_id')}"
        f" WHERE g.{column(UserGroup, 'workspace')} = %s"
        f" AND g.{column(UserGroup, 'provided_id')} = %s"
        f" ORDER BY m.{column(SchemaMapping, 'id')}"
    )
    return sql, group_fields + mapping_fields


_FIND_GROUP = PreparedSQL(UserGroup, _find_group_sql)


def find_group(workspace_id: int, provided_id: str) -> UserGroup | None:
    """The group with its ``mapping`` dict, in one query (a LEFT JOIN on the mappings,
    in the order they were stored)."""
    using, rows = _FIND_GROUP.fetch([workspace_id, provided_id])
    if not rows:
        return None
    count = len(_GROUP_FIELDS)
    group = UserGroup.from_db(using, _GROUP_FIELDS, rows[0][:count])
    group.mapping = {row[count]: row[count + 1] for row in rows if row[count] is not None}
    return group


@retry_on_conflict
def _find_group_locked(workspace_id: int, provided_id: str) -> UserGroup | None:
    """Read the winner of a lost insert race with a locking read, which sees the latest
    committed row even inside a REPEATABLE READ transaction (MySQL, MariaDB). None if
    the winner is gone again (deleted, or renamed)."""
    with transaction.atomic():
        group = (
            UserGroup.objects.select_for_update()
            .filter(workspace_id=workspace_id, provided_id=provided_id)
            .first()
        )
        if group is not None:
            group.mapping = dict(group.mappings.values_list("schema_id", "data_source_id"))
    return group


@retry_on_conflict
@sensitive_variables("token")
def create_group(
    workspace_id: int,
    provided_id: str,
    name: str,
    mapping: dict[str, str],
    properties: dict[str, Any] | None,
) -> UserGroup:
    """Insert a group and its mappings in one transaction; IntegrityError on a duplicate."""
    token = crypto.new_group_token()
    group = UserGroup(
        workspace_id=workspace_id, provided_id=provided_id, name=name, properties=properties
    )
    group.set_token(token)
    with transaction.atomic():
        group.save(force_insert=True)
        SchemaMapping.objects.bulk_create(
            SchemaMapping(group=group, schema_id=schema_id, data_source_id=source)
            for schema_id, source in mapping.items()
        )
    group.mapping = dict(mapping)
    logger.info("Created user group team_id=%s in workspace %s", group.team_id, workspace_id)
    return group


# Tries of an insert (get-or-create) or a rename that meets a group holding its id, when
# each time that group is gone before it can be read: the id was freed meanwhile.
ATTEMPTS_WHEN_GONE = 5


def get_or_create_group(
    workspace_id: int,
    provided_id: str,
    name: str | None = None,
    mapping: dict[str, str] | None = None,
    properties: dict[str, Any] | None = None,
) -> tuple[UserGroup, bool]:
    """The group of ``provided_id``, created if it does not exist; ``(group, created)``.

    A known group is returned as stored, whatever the other arguments say. Two callers
    racing to create one id meet at the unique constraint: the loser reads the winner.
    If the winner is gone before the loser reads it (deleted or renamed meanwhile), the
    id is free again: the loser tries again, :data:`ATTEMPTS_WHEN_GONE` times in all.
    """
    for _attempt in range(ATTEMPTS_WHEN_GONE):
        group = find_group(workspace_id, provided_id)
        if group is not None:
            return group, False
        try:
            return create_group(
                workspace_id,
                provided_id,
                name if name is not None else provided_id,
                mapping or {},
                properties,
            ), True
        except IntegrityError as exc:
            error = exc
        group = _find_group_locked(workspace_id, provided_id)
        if group is not None:
            return group, False
        logger.info("The group that won an insert race was gone before it was read; retrying")
    # Never a winner to read: the insert fails for another reason (e.g. a mapping row);
    # report that error, not a missing group.
    raise error


@sensitive_variables("current_token")
def rotate_token(workspace_id: int, current_token: str) -> UserGroup | None:
    """Give the group holding ``current_token`` a new token; None if no group holds it.

    The update is a compare-and-swap on the old digest, so of any number of concurrent
    rotations of one token exactly one wins. The returned group's ``token`` is the new one.
    """
    if not crypto.looks_like_group_token(current_token):
        return None
    return _rotate_digest(workspace_id, crypto.digest(current_token))


# Retried with the digest, not the token: the retry's frame holds its arguments, and
# only a function marked with sensitive_variables has them hidden from error reports.
@retry_on_conflict
def _rotate_digest(workspace_id: int, old_digest: str) -> UserGroup | None:
    using, rows = _FIND_BY_DIGEST.fetch([workspace_id, old_digest])
    if not rows:
        return None
    return _swap_token(UserGroup.from_db(using, _ROTATED_FIELDS, rows[0]), old_digest)


_ROTATED_FIELDS = ("team_id", "workspace_id", "provided_id", "name")


def _find_by_digest_sql(quote_name) -> tuple[str, list]:
    columns, fields = _columns(UserGroup, _ROTATED_FIELDS, quote_name, "g")
    column = lambda name: quote_name(UserGroup._meta.get_field(name).column)  # noqa: E731
    sql = (
        f"SELECT {columns} FROM {quote_name(UserGroup._meta.db_table)} g"
        f" WHERE g.{column('workspace')} = %s AND g.{column('token_digest')} = %s"
    )
    return sql, fields


_FIND_BY_DIGEST = PreparedSQL(UserGroup, _find_by_digest_sql)


def rotate_group_token(group: UserGroup) -> UserGroup | None:
    """Rotate the token ``group`` holds now (as loaded); None if it changed meanwhile."""
    return _swap_token(group, group.token_digest)


def _swap_token(group: UserGroup, old_digest: str) -> UserGroup | None:
    group.set_token(crypto.new_group_token())
    now = timezone.now()
    grace = usergroups_settings.ROTATION_GRACE_SECONDS
    won = UserGroup.objects.filter(pk=group.pk, token_digest=old_digest).update(
        token_digest=group.token_digest,
        token_sealed=group.token_sealed,
        token_rotated_at=now,
        updated_at=now,
        previous_token_digest=old_digest if grace else None,
        previous_token_valid_until=now + timedelta(seconds=grace) if grace else None,
    )
    if not won:
        return None
    group.token_rotated_at = now
    send_on_commit(token_rotated, UserGroup, group=group)
    logger.info("Rotated the token of user group team_id=%s", group.pk)
    return group


class ProvidedIdTaken(Exception):
    """A rename to a ``user_group_id`` another group of the workspace already has."""


def update_group(
    workspace_id: int,
    provided_id: str,
    changes: dict[str, Any],
) -> UserGroup | None:
    """Apply ``changes`` (name, properties, mapping, provided_id) to a group; None if unknown.

    Given fields replace what is stored (a given mapping replaces the whole mapping);
    absent ones stay. The row is locked for the transaction, so concurrent updates queue.
    A rename to an id another group has raises :class:`ProvidedIdTaken`; if that group is
    gone by the time it is looked for, the id is free again and the update is retried.
    """
    new_id = changes.get("provided_id")
    for _attempt in range(ATTEMPTS_WHEN_GONE):
        try:
            group = _update_group(workspace_id, provided_id, changes)
            break
        except IntegrityError as exc:
            if new_id is None or new_id == provided_id:
                raise  # not a rename conflict: a bug, not bad input
            taken = UserGroup.objects.filter(workspace_id=workspace_id, provided_id=new_id)
            if taken.exists():
                raise ProvidedIdTaken(new_id)
            error = exc
    else:
        # The id was never found taken: the update fails for another reason (a bug).
        raise error
    if group is None:
        return None
    group.mapping = dict(group.mappings.values_list("schema_id", "data_source_id"))
    logger.info("Updated user group team_id=%s", group.team_id)
    return group


@retry_on_conflict
def _update_group(workspace_id: int, provided_id: str, changes: dict[str, Any]) -> UserGroup | None:
    with transaction.atomic():
        group = (
            UserGroup.objects.select_for_update()
            .filter(workspace_id=workspace_id, provided_id=provided_id)
            .first()
        )
        if group is None:
            return None
        for field in ("name", "properties", "provided_id"):
            if field in changes:
                setattr(group, field, changes[field])
        group.save()
        if "mapping" in changes:
            group.mappings.all().delete()
            SchemaMapping.objects.bulk_create(
                SchemaMapping(group=group, schema_id=schema_id, data_source_id=source)
                for schema_id, source in changes["mapping"].items()
            )
    return group


@sensitive_variables("token")
def delete_group(
    workspace_id: int, *, provided_id: str | None = None, token: str | None = None
) -> UserGroup | None:
    """Delete the group named by ``provided_id`` or holding ``token``; None if unknown.

    Returns the group as it was, ``team_id`` included (Django clears it on delete).
    """
    if provided_id is not None:
        return _delete_group(workspace_id, provided_id=provided_id)
    if crypto.looks_like_group_token(token):
        return _delete_group(workspace_id, token_digest=crypto.digest(token))
    return None


@retry_on_conflict  # given the digest, not the token (see _rotate_digest)
def _delete_group(workspace_id: int, **lookup: str) -> UserGroup | None:
    with transaction.atomic():
        group = (
            UserGroup.objects.select_for_update()
            .filter(workspace_id=workspace_id, **lookup)
            .first()
        )
        if group is None:
            return None
        team_id = group.team_id
        group.delete()
    group.team_id = team_id
    logger.info("Deleted user group team_id=%s", team_id)
    return group


def list_groups(workspace_id: int, provided_id_prefix: str = ""):
    """The workspace's groups, oldest first, with their mappings prefetched."""
    groups = UserGroup.objects.filter(workspace_id=workspace_id).order_by("team_id")
    if provided_id_prefix:
        # Not __startswith: SQLite's LIKE ignores case. Equality is exact everywhere.
        head = Left("provided_id", len(provided_id_prefix))
        groups = groups.annotate(id_head=head).filter(id_head=provided_id_prefix)
    return groups.defer("token_digest", "token_sealed").prefetch_related("mappings")

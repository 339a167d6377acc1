"""End users: every write to an :class:`~usergroups.models.EndUser`, and the reads the
API answers with.

The API, the admin and host code all change end users through here: in a transaction,
logged by workspace and row id (never by attributes), announced after commit by the
signals of :mod:`usergroups.signals` with the :class:`EndUserRecord` returned.

Create-or-update reads first and writes only what differs, so a call that changes
nothing costs one read and no write. A concurrent create of one ``end_user_id`` meets
the unique constraint: the loser changes the winner's row instead.
"""

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connections, router
from django.db.models import F, QuerySet
from django.db.models.functions import Collate, Left
from django.utils import timezone

from usergroups import read_model, telemetry
from usergroups.logs import get_logger
from usergroups.models import EndUser
from usergroups.services import audit
from usergroups.services.retry import retry_on_deadlock
from usergroups.signals import (
    end_user_created,
    end_user_deleted,
    end_user_tokens_revoked,
    end_user_updated,
    send_on_commit,
)

logger = get_logger(__name__)

#: What a caller may set on an end user.
CHANGEABLE = ("display_name", "attributes", "disabled")

# Tries of a create-or-update whose row vanishes between its read and its write (a
# concurrent delete), or whose create loses to one that is deleted before it is read.
ATTEMPTS_WHEN_GONE = 5


@dataclass(frozen=True)
class EndUserRecord:
    """An end user as every function here returns it: whole, immutable, no query to read."""

    pk: int
    workspace_id: int
    end_user_id: str
    display_name: str
    attributes: dict[str, Any] = field(hash=False)
    disabled: bool
    created_at: datetime
    updated_at: datetime
    tokens_revoked_at: datetime | None
    #: What this person's embed tokens carry and verification compares (see EndUser).
    embed_binding: str
    embed_generation: int

    @classmethod
    def from_model(cls, row: EndUser) -> "EndUserRecord":
        return cls(
            pk=row.pk,
            workspace_id=row.workspace_id,
            end_user_id=row.end_user_id,
            display_name=row.display_name,
            attributes=row.attributes,
            disabled=row.disabled,
            created_at=row.created_at,
            updated_at=row.updated_at,
            tokens_revoked_at=row.tokens_revoked_at,
            embed_binding=row.embed_binding,
            embed_generation=row.embed_generation,
        )


class EndUserDisabled(Exception):
    """A mint for a disabled end user: no token, nothing written."""


def _atomic() -> AbstractContextManager[None]:
    return read_model.writing(router.db_for_write(EndUser))


def _named(workspace_id: int, end_user_id: str) -> QuerySet[EndUser]:
    return EndUser.objects.filter(workspace_id=workspace_id, end_user_id=end_user_id)


def find_end_user(workspace_id: int, end_user_id: str) -> EndUserRecord | None:
    """The workspace's end user ``end_user_id``, or None: one indexed query."""
    row = _named(workspace_id, end_user_id).first()
    return None if row is None else EndUserRecord.from_model(row)


def _same_json(a: Any, b: Any) -> bool:
    # Not ==: Python holds True == 1 == 1.0, which read back as different JSON.
    def canonical(value: Any) -> str:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))

    return canonical(a) == canonical(b)


def attributes_differ(found: EndUserRecord | None, attributes: dict[str, Any]) -> bool:
    """Whether setting ``attributes`` would change those of ``found`` (None: a person
    not created yet, whose attributes would be ``{}``)."""
    return not _same_json(found.attributes if found is not None else {}, attributes)


def _differing(row: EndUser | EndUserRecord, changes: dict[str, Any]) -> list[str]:
    """The fields of ``changes`` whose value differs from the row's."""
    differing = []
    for name in CHANGEABLE:
        if name not in changes:
            continue
        stored, given = getattr(row, name), changes[name]
        same = _same_json(stored, given) if name == "attributes" else stored == given
        if not same or type(stored) is not type(given):
            differing.append(name)
    return differing


def put_end_user(
    workspace_id: int, end_user_id: str, changes: dict[str, Any]
) -> tuple[EndUserRecord, bool]:
    """Create the end user with ``changes`` (fields of :data:`CHANGEABLE`; a missing
    ``display_name`` is the id), or set the given fields that differ; ``(end user,
    created)``. Writes nothing when nothing differs. Disabling revokes the person's tokens.
    """
    return put_read_end_user(
        find_end_user(workspace_id, end_user_id), workspace_id, end_user_id, changes
    )


def put_read_end_user(
    found: EndUserRecord | None,
    workspace_id: int,
    end_user_id: str,
    changes: dict[str, Any],
    *,
    for_mint: bool = False,
    before_write: Callable[[], None] | None = None,
) -> tuple[EndUserRecord, bool]:
    """:func:`put_end_user` for a caller that has read the person already: ``found``,
    or None if there was none (a mint reads the person with its group).

    ``for_mint``: a disabled end user raises :class:`EndUserDisabled` before anything
    is written (an embed token is about to be minted for the person). ``before_write``
    is called when something is about to be written, and may raise to write nothing."""
    unknown = set(changes) - set(CHANGEABLE)
    if unknown:
        raise ValueError(f"Not fields an end user can change: {sorted(unknown)}")
    row = found
    if for_mint and row is not None and row.disabled:
        raise EndUserDisabled(end_user_id)
    if row is not None and not _differing(row, changes):
        return row, False
    if before_write is not None:
        before_write()
    error: IntegrityError | None = None
    for _attempt in range(ATTEMPTS_WHEN_GONE):
        if row is None:
            try:
                return _create(workspace_id, end_user_id, changes), True
            except IntegrityError as exc:
                error = exc  # created meanwhile: change that one
        updated = _update(_named(workspace_id, end_user_id), changes, for_mint=for_mint)
        if updated is not None:
            return updated, False
        row = None  # deleted between the read and the lock: create it again
    assert error is not None  # never the winner to change: the insert fails otherwise
    raise error


@retry_on_deadlock
def _create(workspace_id: int, end_user_id: str, changes: dict[str, Any]) -> EndUserRecord:
    now = timezone.now()
    row = EndUser(
        workspace_id=workspace_id,
        end_user_id=end_user_id,
        display_name=changes.get("display_name", end_user_id),
        attributes=changes.get("attributes", {}),
        disabled=changes.get("disabled", False),
        created_at=now,
        updated_at=now,
    )
    with _atomic():
        row.save(force_insert=True)
        audit.record(
            workspace_id,
            audit.END_USER_CREATED,
            end_user_id=end_user_id,
            details={
                "fields": [name for name in CHANGEABLE if name in changes],
                "disabled": row.disabled,
            },
        )
    record = EndUserRecord.from_model(row)
    send_on_commit(end_user_created, EndUser, end_user=record)
    logger.info("Created end user pk=%s in workspace %s", record.pk, workspace_id)
    return record


def update_end_user(
    workspace_id: int, end_user_id: str, changes: dict[str, Any]
) -> EndUserRecord | None:
    """Set the given fields that differ on an existing end user; None if unknown."""
    return _update(_named(workspace_id, end_user_id), changes)


def disable_end_user(workspace_id: int, end_user_id: str) -> EndUserRecord | None:
    """Disable the end user, which revokes its tokens; None if unknown."""
    return update_end_user(workspace_id, end_user_id, {"disabled": True})


@retry_on_deadlock
def _update(
    rows: QuerySet[EndUser], changes: dict[str, Any], *, for_mint: bool = False
) -> EndUserRecord | None:
    """The row locked, then only what differs on it now written (nothing if nothing does)."""
    with _atomic():
        row = rows.select_for_update().first()
        if row is None:
            return None
        if for_mint and row.disabled:
            raise EndUserDisabled(row.end_user_id)
        differing = _differing(row, changes)
        if differing:
            for name in differing:
                setattr(row, name, changes[name])
            row.updated_at = timezone.now()
            written = [*differing, "updated_at"]
            details: dict[str, Any] = {"fields": differing}
            if "disabled" in differing:
                details["disabled"] = row.disabled
            row.save(update_fields=written)
            if "disabled" in differing and row.disabled:
                # Verification refuses a disabled person's tokens; disabling also revokes
                # them, so enabling the person again does not bring them back.
                _advance(EndUser.objects.filter(pk=row.pk), row.updated_at)
                row.refresh_from_db(fields=["embed_generation", "tokens_revoked_at"])
                details["tokens_revoked"] = True
            audit.record(
                row.workspace_id,
                audit.END_USER_UPDATED,
                end_user_id=row.end_user_id,
                details=details,
            )
    record = EndUserRecord.from_model(row)
    if differing:
        send_on_commit(end_user_updated, EndUser, end_user=record)
        logger.info("Updated end user pk=%s (%s)", record.pk, ", ".join(differing))
    return record


@telemetry.spanned("usergroups.embed.revoke", axis="end_user")
@retry_on_deadlock
def revoke_tokens(workspace_id: int, end_user_id: str) -> EndUserRecord | None:
    """Revoke every embed token naming the end user minted before now, in every group;
    the person is not otherwise changed. None if unknown.

    One ``UPDATE ... embed_generation + 1``: a mint that read the generation before it
    commits signs a token this refuses; one that reads it after rightly works."""
    with _atomic():
        if not _advance(_named(workspace_id, end_user_id)):
            return None
        audit.record(
            workspace_id,
            audit.EMBED_TOKEN_REVOKED,
            end_user_id=end_user_id,
            details={"axis": "end_user"},
        )
        row = _named(workspace_id, end_user_id).first()
    if row is None:  # a read of the row this transaction has just written: never
        return None
    record = EndUserRecord.from_model(row)
    send_on_commit(end_user_tokens_revoked, EndUser, end_user=record)
    logger.info("Revoked the embed tokens of end user pk=%s", record.pk)
    telemetry.revoked("end_user", workspace_id)
    return record


def _advance(rows: QuerySet[EndUser], at: datetime | None = None) -> int:
    """Advance the embed generation of ``rows`` (one ``UPDATE``, which locks them),
    revoked ``at`` (default: now); how many there were."""
    return rows.update(
        embed_generation=F("embed_generation") + 1, tokens_revoked_at=at or timezone.now()
    )


@telemetry.spanned("usergroups.embed.revoke", axis="end_user")
@retry_on_deadlock
def start_exclusive_session(end_user: EndUserRecord) -> EndUserRecord:
    """Revoke every embed token of ``end_user`` minted so far and answer the person with
    the generation that a new token must carry: the one this call made. Of two calls at
    once, each gets its own generation and only the later one stays current, so at most
    one of their tokens verifies. :class:`EndUserDisabled` if the person was disabled
    meanwhile; the person as given if deleted meanwhile (a token for them never verifies)."""
    rows = EndUser.objects.filter(pk=end_user.pk)
    with _atomic():
        _advance(rows)
        row = rows.first()  # holds the lock the UPDATE took: sees this generation
        if row is not None and row.disabled:
            raise EndUserDisabled(end_user.end_user_id)
        if row is not None:
            audit.record(
                row.workspace_id,
                audit.EMBED_TOKEN_REVOKED,
                end_user_id=row.end_user_id,
                details={"axis": "end_user", "exclusive": True},
            )
    if row is None:
        return end_user
    logger.info("Started an exclusive embed session for end user pk=%s", row.pk)
    telemetry.revoked("end_user", row.workspace_id)
    return EndUserRecord.from_model(row)


@retry_on_deadlock
def delete_end_user(workspace_id: int, end_user_id: str) -> EndUserRecord | None:
    """Delete the end user (its tokens with it); the end user as it was, None if unknown."""
    with _atomic():
        row = _named(workspace_id, end_user_id).select_for_update().first()
        if row is None:
            return None
        record = EndUserRecord.from_model(row)
        EndUser.objects.filter(pk=row.pk).delete()
        audit.record(workspace_id, audit.END_USER_DELETED, end_user_id=end_user_id)
    send_on_commit(end_user_deleted, EndUser, end_user=record)
    logger.info("Deleted end user pk=%s", record.pk)
    return record


def _listed(workspace_id: int, end_user_id_prefix: str) -> QuerySet[EndUser]:
    rows = EndUser.objects.filter(workspace_id=workspace_id)
    if end_user_id_prefix:
        # Not __startswith: SQLite's LIKE ignores case. Equality is exact everywhere.
        head = Left("end_user_id", len(end_user_id_prefix))
        rows = rows.annotate(id_head=head).filter(id_head=end_user_id_prefix)
    return rows


def count_end_users(workspace_id: int, end_user_id_prefix: str = "") -> int:
    """How many end users the workspace has (whose id starts with the prefix)."""
    return _listed(workspace_id, end_user_id_prefix).count()


def list_end_users(
    workspace_id: int, end_user_id_prefix: str = "", *, offset: int = 0, limit: int | None = None
) -> list[EndUserRecord]:
    """The workspace's end users (whose id starts with the prefix), by ``end_user_id`` in
    code point order on every database, from ``offset``, at most ``limit``: one query."""
    order: Any = F("end_user_id")
    if connections[router.db_for_read(EndUser)].vendor == "postgresql":
        # PostgreSQL sorts by the database's locale; "C" is code point order, as the
        # binary collations of SQLite and MariaDB (ExactCharField) are.
        order = Collate("end_user_id", "C")
    rows = _listed(workspace_id, end_user_id_prefix).order_by(order)
    stop = None if limit is None else offset + limit
    return [EndUserRecord.from_model(row) for row in rows[offset:stop]]

"""The audit trail's one writer (CONTRACT section 8).

Every service that changes something calls :func:`record` inside its own
``transaction.atomic``, so the event commits or rolls back with the change, from every
door (API, admin, commands, host code). The actor, request id and client address come
from :mod:`usergroups.audit_context`. An event never holds a secret: a token is named by
its ``jti``, a key by its prefix.
"""

import secrets
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import router, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from usergroups import audit_context, telemetry
from usergroups.models import AuditEvent, Workspace
from usergroups.services import outbox

USER_GROUP_CREATED = "user_group.created"
USER_GROUP_UPDATED = "user_group.updated"
USER_GROUP_MOVED = "user_group.moved"
USER_GROUP_DELETED = "user_group.deleted"
USER_GROUP_TOKEN_ROTATED = "user_group.token_rotated"
EMBED_TOKEN_MINTED = "embed_token.minted"
EMBED_TOKEN_REVOKED = "embed_token.revoked"
END_USER_CREATED = "end_user.created"
END_USER_UPDATED = "end_user.updated"
END_USER_DELETED = "end_user.deleted"
API_KEY_CREATED = "api_key.created"
API_KEY_ROTATED = "api_key.rotated"
API_KEY_REVOKED = "api_key.revoked"
API_KEY_SCOPES_CHANGED = "api_key.scopes_changed"
WEBHOOK_CREATED = "webhook.created"
WEBHOOK_DELETED = "webhook.deleted"
WEBHOOK_DISABLED = "webhook.disabled"

#: Every action an event may name, in the contract's order.
ACTIONS: tuple[str, ...] = (
    USER_GROUP_CREATED,
    USER_GROUP_UPDATED,
    USER_GROUP_MOVED,
    USER_GROUP_DELETED,
    USER_GROUP_TOKEN_ROTATED,
    EMBED_TOKEN_MINTED,
    EMBED_TOKEN_REVOKED,
    END_USER_CREATED,
    END_USER_UPDATED,
    END_USER_DELETED,
    API_KEY_CREATED,
    API_KEY_ROTATED,
    API_KEY_REVOKED,
    API_KEY_SCOPES_CHANGED,
    WEBHOOK_CREATED,
    WEBHOOK_DELETED,
    WEBHOOK_DISABLED,
)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def new_event_id(at_microseconds: int) -> str:
    """``evt_`` + the time (14 hex digits of microseconds) + 16 random hex digits."""
    return f"evt_{at_microseconds:014x}{secrets.token_hex(8)}"


def record(
    workspace_id: int,
    action: str,
    *,
    user_group_id: str | None = None,
    end_user_id: str | None = None,
    details: Mapping[str, Any] | None = None,
) -> AuditEvent:
    """Write the event of ``action`` in the current transaction and return it.

    Called by the services inside the ``transaction.atomic`` of the change (joined here
    without a savepoint: one INSERT, no extra query). Raises ``ValueError`` for an action
    outside :data:`ACTIONS`.
    """
    event = _event(workspace_id, action, user_group_id, end_user_id, details)
    _insert([event])
    return event


def record_each(
    workspace_id: int, action: str, subjects: Sequence[Mapping[str, Any]]
) -> list[AuditEvent]:
    """:func:`record` for many subjects of one action at once (each a mapping of
    ``user_group_id``, ``end_user_id``, ``details``), in one INSERT: a cascade's deletes
    cost one statement, however many groups go."""
    events = [
        _event(
            workspace_id,
            action,
            subject.get("user_group_id"),
            subject.get("end_user_id"),
            subject.get("details"),
        )
        for subject in subjects
    ]
    _insert(events)
    return events


def _event(
    workspace_id: int,
    action: str,
    user_group_id: str | None,
    end_user_id: str | None,
    details: Mapping[str, Any] | None,
) -> AuditEvent:
    if action not in ACTIONS:
        raise ValueError(f"Unknown audit action: {action!r}")
    context = audit_context.current()
    at = timezone.now()
    return AuditEvent(
        workspace_id=workspace_id,
        event_id=new_event_id((at - EPOCH) // timedelta(microseconds=1)),
        at=at,
        action=action,
        actor_type=context.actor.type,
        actor_id=context.actor.id,
        user_group_id=user_group_id,
        end_user_id=end_user_id,
        request_id=context.request_id,
        ip=context.ip,
        details=dict(details or {}),
    )


@telemetry.times_audit_writes
def _insert(events: list[AuditEvent]) -> None:
    """The one place events are written (what follows every event, e.g. a webhook's
    outbox row, belongs here). One event that no webhook receives is one INSERT, atomic
    by itself (a mint's); else the events and their deliveries in one transaction."""
    using = router.db_for_write(AuditEvent)
    deliveries = outbox.deliveries_of(
        events, outbox.webhooks_of(event.workspace_id for event in events)
    )
    if len(events) == 1 and not deliveries:
        events[0].save(force_insert=True)
    else:
        with transaction.atomic(using=using, savepoint=False):
            AuditEvent.objects.bulk_create(events)
            outbox.add_deliveries(deliveries)  # the outbox rows, in the same transaction


def actions_under(prefix: str) -> list[str]:
    """The actions a dotted prefix names: ``"user_group"`` names the five
    ``user_group.*``, ``"user_group.created"`` itself; a prefix stops at a dot, so
    ``"user_group.cre"`` names none."""
    return [action for action in ACTIONS if action == prefix or action.startswith(prefix + ".")]


def events_of(
    workspace_id: int,
    *,
    action_prefix: str | None = None,
    user_group_id: str | None = None,
    end_user_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> QuerySet[AuditEvent]:
    """The workspace's events that match every filter given (unordered: see
    :func:`page_of_events`). ``since`` is inclusive, ``until`` exclusive."""
    events = AuditEvent.objects.filter(workspace_id=workspace_id)
    if action_prefix is not None:
        # IN over the closed list of actions: an index range on (workspace, action, id)
        # on every database, where LIKE would depend on the column's collation.
        events = events.filter(action__in=actions_under(action_prefix))
    if user_group_id is not None:
        events = events.filter(user_group_id=user_group_id)
    if end_user_id is not None:
        events = events.filter(end_user_id=end_user_id)
    if since is not None:
        events = events.filter(at__gte=since)
    if until is not None:
        events = events.filter(at__lt=until)
    return events


@dataclass(frozen=True)
class Position:
    """Where a page ended: the last event's ``id``, and its ``at`` when paging by time."""

    id: int
    at: datetime | None = None


def page_of_events(
    events: QuerySet[AuditEvent], *, by_time: bool, after: Position | None, limit: int
) -> tuple[list[AuditEvent], Position | None]:
    """A page of ``events``, newest first, after ``after``: ``(events, where the next page
    starts or None)``, one query.

    Keyset paging: by ``id`` (the order of insertion, index (workspace, id)), or, when a
    time window is given (``by_time``), by ``(at, id)`` so the (workspace, at, id) index
    serves the window and the order at once (ordered by id, a database would scan every
    newer event to reach an old window). An event inserted while a client pages sorts
    ahead of every page it has not read yet, so it never shows on them: nothing is
    skipped or shown twice, whatever is written meanwhile. Raises ``ValueError`` for a
    position of the other kind.
    """
    rows = list(page_query(events, by_time=by_time, after=after, limit=limit))
    if len(rows) <= limit:
        return rows, None
    last = rows[limit - 1]
    return rows[:limit], Position(last.id, last.at if by_time else None)


def page_query(
    events: QuerySet[AuditEvent], *, by_time: bool, after: Position | None, limit: int
) -> QuerySet[AuditEvent]:
    """The query of :func:`page_of_events` (one more row than ``limit``: is there more?)."""
    if after is not None and (after.at is not None) != by_time:
        raise ValueError("The position is not one of this kind of page.")
    if by_time:
        ordered = events.order_by("-at", "-id")
        if after is not None:
            # at <= after.at bounds the index range; the rest breaks the tie by id.
            ordered = ordered.filter(at__lte=after.at).filter(
                Q(at__lt=after.at) | Q(id__lt=after.id)
            )
    else:
        ordered = events.order_by("-id")
        if after is not None:
            ordered = ordered.filter(id__lt=after.id)
    return ordered[: limit + 1]


def timestamp(moment: datetime | None) -> str | None:
    """A time as events write it: ISO 8601 in UTC with ``Z``; None stays None."""
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def as_dict(event: AuditEvent) -> dict[str, Any]:
    """An event as the API, the export and webhooks show it (CONTRACT section 8)."""
    return {
        "id": event.event_id,
        "at": timestamp(event.at),
        "action": event.action,
        "actor": event.actor,
        "user_group_id": event.user_group_id,
        "end_user_id": event.end_user_id,
        "request_id": event.request_id,
        "ip": event.ip,
        "details": event.details,
    }


def export_events(
    workspace_id: int, *, since: datetime | None = None, batch_size: int = 1000
) -> Iterator[dict[str, Any]]:
    """Every event of the workspace (at or after ``since``), oldest first, as
    :func:`as_dict`: read in keyset batches of ``batch_size``, so memory stays constant
    however many there are and no read holds a long transaction open."""
    after_id = 0
    while True:
        batch = AuditEvent.objects.filter(workspace_id=workspace_id, id__gt=after_id)
        if since is not None:
            batch = batch.filter(at__gte=since)
        rows = list(batch.order_by("id")[:batch_size])
        for event in rows:
            yield as_dict(event)
        if len(rows) < batch_size:
            return
        after_id = rows[-1].id


def prune_events(before: datetime, *, batch_size: int = 1000) -> tuple[int, int]:
    """Delete the events older than ``before`` in batches of at most ``batch_size`` rows,
    each its own short transaction (no long lock): ``(events deleted, batches)``. Each
    batch is found by the (workspace, at) index, then deleted by primary key."""
    deleted = batches = 0
    using = router.db_for_write(AuditEvent)
    for workspace_id in list(Workspace.objects.order_by("pk").values_list("pk", flat=True)):
        while True:
            with transaction.atomic(using=using):
                ids = list(
                    AuditEvent.objects.filter(workspace_id=workspace_id, at__lt=before)
                    .order_by("at")
                    .values_list("id", flat=True)[:batch_size]
                )
                if ids:
                    AuditEvent.objects.filter(id__in=ids).delete()
                    batches += 1
            deleted += len(ids)
            if len(ids) < batch_size:
                break
    return deleted, batches

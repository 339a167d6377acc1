"""The audit trail's one writer (CONTRACT section 8).

Every service that changes something calls :func:`record` inside its own
``transaction.atomic``, so the event commits or rolls back with the change, from every
door (API, admin, commands, host code). The actor, request id and client address come
from :mod:`usergroups.audit_context`. An event never holds a secret: a token is named by
its ``jti``, a key by its prefix.
"""

import secrets
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import router, transaction
from django.utils import timezone

from usergroups import audit_context
from usergroups.models import AuditEvent

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

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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
    if action not in ACTIONS:
        raise ValueError(f"Unknown audit action: {action!r}")
    context = audit_context.current()
    at = timezone.now()
    event = AuditEvent(
        workspace_id=workspace_id,
        event_id=new_event_id((at - _EPOCH) // timedelta(microseconds=1)),
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
    with transaction.atomic(using=router.db_for_write(AuditEvent), savepoint=False):
        event.save(force_insert=True)
    return event

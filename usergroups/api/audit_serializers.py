"""Query and answer of ``GET /api/user/audit`` (CONTRACT section 8)."""

import re
import struct
from datetime import datetime, timedelta
from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from usergroups import crypto
from usergroups.api.serializers import Answer, StrictCharField
from usergroups.audit_context import ACTOR_TYPES
from usergroups.services import audit
from usergroups.services.audit import EPOCH, Position

# A dotted prefix: one or more segments of lowercase letters and underscores.
ACTION_PREFIX_PATTERN = r"[a-z_]+(?:\.[a-z_]+)*"
ACTION_PREFIX = re.compile(ACTION_PREFIX_PATTERN)
MAX_ACTION_LENGTH = 64
MAX_CURSOR_LENGTH = 64
CURSOR_PATTERN = "^[A-Za-z0-9_-]+$"


# A cursor is a position sealed for the workspace it pages (usergroups.crypto.seal_box):
# the row id it holds counts every workspace's events, so it is never shown. Fixed width,
# so its length tells nothing either: a kind byte, the id, the time (0 when paging by id).
CURSOR_PURPOSE = "audit.cursor"
CURSOR_LAYOUT = struct.Struct(">cQQ")
BY_ID, BY_TIME = b"i", b"t"


def encode_cursor(position: Position, workspace_id: int) -> str:
    """Opaque to clients: where the next page starts (see services.audit.Position)."""
    if position.at is None:
        data = CURSOR_LAYOUT.pack(BY_ID, position.id, 0)
    else:
        data = CURSOR_LAYOUT.pack(BY_TIME, position.id, microseconds_since_epoch(position.at))
    return crypto.seal_box(CURSOR_PURPOSE, data, str(workspace_id))


def decode_cursor(cursor: str, workspace_id: int) -> Position | None:
    """The position an :func:`encode_cursor` of this workspace sealed; None for any other text."""
    data = crypto.open_box(CURSOR_PURPOSE, cursor, str(workspace_id))
    if data is None or len(data) != CURSOR_LAYOUT.size:
        return None
    kind, row_id, microseconds = CURSOR_LAYOUT.unpack(data)
    if kind == BY_ID:
        return Position(row_id)
    return Position(row_id, EPOCH + timedelta(microseconds=microseconds))


def microseconds_since_epoch(at: datetime) -> int:
    return (at - EPOCH) // timedelta(microseconds=1)


class ActionPrefixField(StrictCharField):
    default_error_messages = {
        "prefix": _("Must be a dotted action prefix, such as user_group or embed_token.minted.")
    }

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", MAX_ACTION_LENGTH)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not ACTION_PREFIX.fullmatch(value):
            self.fail("prefix")
        return value


class CursorField(serializers.Field):
    """The ``next_cursor`` of an earlier answer to this workspace (the serializer's
    context names it, ``workspace_id``); decodes to where the next page starts."""

    default_error_messages = {"cursor": _("Must be a next_cursor from an earlier answer.")}

    def to_internal_value(self, data: Any) -> Position:
        if not isinstance(data, str) or not 0 < len(data) <= MAX_CURSOR_LENGTH:
            self.fail("cursor")
        position = decode_cursor(data, self.context["workspace_id"])
        if position is None:
            self.fail("cursor")
        return position

    def to_representation(self, value: Position) -> str:
        return encode_cursor(value, self.context["workspace_id"])


class AuditQuerySerializer(serializers.Serializer):
    """The filters and page of ``GET /api/user/audit`` (its query string)."""

    action = ActionPrefixField(
        required=False,
        help_text="A dotted prefix of actions: `user_group`, `user_group.created`.",
    )
    user_group_id = StrictCharField(required=False)
    end_user_id = StrictCharField(required=False)
    since = serializers.DateTimeField(required=False)
    until = serializers.DateTimeField(required=False)
    limit = serializers.IntegerField(min_value=1, max_value=200, default=50)
    cursor = CursorField(
        required=False, help_text="The `next_cursor` of an earlier answer (opaque)."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        since: datetime | None = attrs.get("since")
        until: datetime | None = attrs.get("until")
        if since is not None and until is not None and until < since:
            raise serializers.ValidationError({"until": [_("Must not be before since.")]})
        # A cursor continues the pages of the filters it came with: paged by time when
        # a window is given, else by insertion.
        cursor: Position | None = attrs.get("cursor")
        if cursor is not None and (cursor.at is not None) != self.by_time(attrs):
            raise serializers.ValidationError({"cursor": [_("Not a cursor of these filters.")]})
        return attrs

    @staticmethod
    def by_time(attrs: dict[str, Any]) -> bool:
        return "since" in attrs or "until" in attrs


class ActorSerializer(serializers.Serializer):
    """Who made the change: an API key (its prefix), a staff user (username) or a command."""

    type = serializers.ChoiceField(choices=ACTOR_TYPES, read_only=True)
    id = serializers.CharField(read_only=True)


class AuditEventSerializer(serializers.Serializer):
    """One change, mint or revocation, and who made it."""

    # The one representation is usergroups.services.audit.as_dict (also the export's and
    # the webhooks'); the fields declared here describe it for the schema.
    def to_representation(self, instance: Any) -> dict[str, Any]:
        return audit.as_dict(instance)

    id = serializers.CharField(source="event_id", read_only=True)
    at = serializers.DateTimeField(read_only=True)
    action = serializers.ChoiceField(choices=audit.ACTIONS, read_only=True)
    actor = ActorSerializer(read_only=True)
    user_group_id = serializers.CharField(read_only=True, allow_null=True)
    end_user_id = serializers.CharField(read_only=True, allow_null=True)
    request_id = serializers.CharField(read_only=True)
    ip = serializers.IPAddressField(read_only=True, allow_null=True)
    details = serializers.DictField(read_only=True)


class AuditAnswer(Answer):
    events = AuditEventSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True, help_text="null on the last page.")

"""Query and answer of ``GET /api/user/audit`` (CONTRACT section 8)."""

import base64
import binascii
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from usergroups.api.serializers import StrictCharField
from usergroups.audit_context import ACTOR_TYPES
from usergroups.services import audit
from usergroups.services.audit import EPOCH, Position

# A dotted prefix: one or more segments of lowercase letters and underscores.
ACTION_PREFIX_PATTERN = r"[a-z_]+(?:\.[a-z_]+)*"
ACTION_PREFIX = re.compile(ACTION_PREFIX_PATTERN)
MAX_ACTION_LENGTH = 64
MAX_CURSOR_LENGTH = 64
CURSOR_PATTERN = "^[A-Za-z0-9_-]+$"
# Year 9999: past it a time is no datetime.
MAX_MICROSECONDS = (datetime(9999, 12, 31, tzinfo=UTC) - EPOCH) // timedelta(microseconds=1)


def encode_cursor(position: Position) -> str:
    """Opaque to clients: where the next page starts (see services.audit.Position)."""
    if position.at is None:
        text = f"a1:{position.id}"
    else:
        text = f"t1:{(position.at - EPOCH) // timedelta(microseconds=1)}:{position.id}"
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


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
    """The ``next_cursor`` of an earlier answer; decodes to the row id to page below."""

    default_error_messages = {"cursor": _("Must be a next_cursor from an earlier answer.")}

    def to_internal_value(self, data: Any) -> Position:
        if not isinstance(data, str) or not 0 < len(data) <= MAX_CURSOR_LENGTH:
            self.fail("cursor")
        try:
            text = base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)).decode("ascii")
        except (binascii.Error, ValueError):
            self.fail("cursor")
        kind, *numbers = text.split(":")
        if not all(number.isdigit() and 0 < int(number) < 2**63 for number in numbers):
            self.fail("cursor")
        if kind == "a1" and len(numbers) == 1:
            return Position(int(numbers[0]))
        if kind == "t1" and len(numbers) == 2 and int(numbers[0]) < MAX_MICROSECONDS:
            return Position(int(numbers[1]), EPOCH + timedelta(microseconds=int(numbers[0])))
        self.fail("cursor")

    def to_representation(self, value: Position) -> str:
        return encode_cursor(value)


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

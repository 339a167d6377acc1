"""Requests and answers of ``/api/user/webhook`` (CONTRACT section 8)."""

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from usergroups.api.audit_serializers import ActionPrefixField
from usergroups.api.serializers import Answer, StrictCharField
from usergroups.conf import usergroups_settings
from usergroups.models import Webhook
from usergroups.services import audit
from usergroups.webhooks import addresses

#: Most action prefixes one webhook may list.
MAX_EVENT_PREFIXES = 50
MAX_DESCRIPTION_LENGTH = 255
WEBHOOK_ID_LENGTH = 40


class WebhookURLField(StrictCharField):
    """Where deliveries go: https to a public address (also http and private addresses
    with WEBHOOK_ALLOW_PRIVATE). A host name is resolved now, and again at every
    delivery, and refused if any address it has is not allowed."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", addresses.MAX_URL_LENGTH)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        url = super().to_internal_value(data)
        try:
            addresses.resolve(url, allow_private=usergroups_settings.WEBHOOK_ALLOW_PRIVATE)
        except addresses.RefusedURL as exc:
            raise serializers.ValidationError(str(exc)) from None
        return url


def event_prefixes() -> list[str]:
    """Every prefix a webhook may subscribe to: each family (``user_group``, also written
    ``user_group.``) and action."""
    families = list(dict.fromkeys(action.split(".", 1)[0] for action in audit.ACTIONS))
    return [*families, *(family + "." for family in families), *audit.ACTIONS]


class EventPrefixField(ActionPrefixField):
    """An action or a family of them; a family's trailing dot (``user_group.``) is the
    same prefix, kept without it."""

    default_error_messages = {"none": _("Names no audit action.")}

    def to_internal_value(self, data: Any) -> str:
        if isinstance(data, str) and data.endswith(".") and not data.endswith(".."):
            data = data[:-1]
        prefix = super().to_internal_value(data)
        if not audit.actions_under(prefix):
            self.fail("none")
        return prefix


class CreateWebhookSerializer(serializers.Serializer):
    url = WebhookURLField(
        help_text="Where events are POSTed: `https` to a public address, unless the server "
        "sets WEBHOOK_ALLOW_PRIVATE (then also `http` and private or loopback addresses). "
        "No credentials, no fragment. The host must resolve: it is resolved now and at "
        "every delivery, and refused (400 naming `url`) if it does not resolve or any of "
        "its addresses is not allowed."
    )
    events = serializers.ListField(
        child=EventPrefixField(),
        min_length=1,
        max_length=MAX_EVENT_PREFIXES,
        help_text="Action prefixes: an action (`embed_token.minted`) or a family of them "
        "(`user_group`, or `user_group.`); the webhook receives every event they name.",
    )
    description = StrictCharField(
        required=False, allow_blank=True, max_length=MAX_DESCRIPTION_LENGTH, default=""
    )

    def validate_events(self, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))  # each prefix once, in the order given


class WebhookIdSerializer(serializers.Serializer):
    webhook_id = StrictCharField(max_length=WEBHOOK_ID_LENGTH)


class WebhookSerializer(serializers.Serializer):
    """A webhook as every answer shows it: never its secret."""

    webhook_id = serializers.CharField(read_only=True)
    url = serializers.CharField(read_only=True)
    events = serializers.ListField(child=serializers.CharField(), read_only=True)
    description = serializers.CharField(read_only=True, allow_blank=True)
    disabled = serializers.BooleanField(read_only=True)
    created_at = serializers.DateTimeField(read_only=True)


class NewWebhookSerializer(WebhookSerializer):
    """The webhook just made, with its signing secret: shown this once."""

    secret = serializers.SerializerMethodField(
        help_text="The signing secret (`whsec_...`): shown this once, stored sealed."
    )

    def get_secret(self, webhook: Webhook) -> str:
        secret: str = self.context["secret"]
        return secret


class CreateWebhookAnswer(Answer):
    webhook = NewWebhookSerializer()


class WebhookAnswer(Answer):
    webhook = WebhookSerializer()


class WebhookListAnswer(Answer):
    webhooks = WebhookSerializer(many=True)

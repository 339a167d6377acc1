"""Request validation and answer shapes of ``/api/user/embed-token`` (CONTRACT section 6).

Strict like the rest of the API: strings are strings, integers are integers (not
``true``, not ``60.0``, not ``"60"``), and every bad field is named in ``fields``.
"""

from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from usergroups.api.serializers import (
    NamedGroupSerializer,
    StrictCharField,
    TokenRequestSerializer,
)
from usergroups.conf import usergroups_settings
from usergroups.embed.grant import EmbedGrant
from usergroups.embed.origins import MAX_ORIGIN_LENGTH, normalize_origin
from usergroups.embed.tokens import timestamp_text
from usergroups.validators import validate_properties

if TYPE_CHECKING:
    from usergroups.services.embed import MintedToken

MIN_EXPIRES_IN = 30
#: The largest ``params``, in bytes of compact UTF-8 JSON.
MAX_PARAMS_BYTES = 2048


class OriginField(serializers.Field):
    """``http(s)://host[:port]`` and nothing after it; kept in serialized form."""

    def to_internal_value(self, data: Any) -> str:
        origin = normalize_origin(data) if isinstance(data, str) else None
        if origin is None:
            raise serializers.ValidationError(
                _(
                    "Must be a web origin: http:// or https://, a host and an optional "
                    "port, nothing after it (at most %(limit)s characters)."
                )
                % {"limit": MAX_ORIGIN_LENGTH}
            )
        return origin


class ExpiresInField(serializers.Field):
    """Whole seconds between 30 and ``EMBED_TOKEN_MAX_SECONDS``."""

    def to_internal_value(self, data: Any) -> int:
        longest = usergroups_settings.EMBED_TOKEN_MAX_SECONDS
        if type(data) is not int or not MIN_EXPIRES_IN <= data <= longest:
            raise serializers.ValidationError(
                _("Must be an integer number of seconds from %(min)s to %(max)s.")
                % {"min": MIN_EXPIRES_IN, "max": longest}
            )
        return data


class ParamsField(serializers.Field):
    def to_internal_value(self, data: Any) -> dict[str, Any]:
        try:
            return validate_properties(data, max_bytes=MAX_PARAMS_BYTES)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None


class MintRequestSerializer(serializers.Serializer):
    user_group_id = StrictCharField()
    resource = StrictCharField(required=False)
    origin = OriginField(required=False)
    expires_in = ExpiresInField(required=False)
    params = ParamsField(required=False)

    def get_fields(self) -> dict[str, serializers.Field]:
        # Read per request, as every setting is: override_settings applies at once.
        fields = super().get_fields()
        fields["origin"].required = usergroups_settings.EMBED_REQUIRE_ORIGIN
        return fields


class EmbedTokenField(serializers.Field):
    """Any string is a token to judge: a malformed or oversized one is just inactive.
    Not a string, or a NUL in it, is a 400 like anywhere in the API."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            raise serializers.ValidationError(_("Must be a string."))
        if "\x00" in data:
            raise serializers.ValidationError(_("Must not contain NUL characters."))
        return data


class EmbedTokenRequestSerializer(TokenRequestSerializer):
    embed_token = EmbedTokenField()


class RevokeRequestSerializer(serializers.Serializer):
    user_group_id = StrictCharField()


def minted_answer(minted: "MintedToken") -> dict[str, Any]:
    """The mint's answer: the new token and the group it is for."""
    return {
        "success": 1,
        "embed_token": minted.token,
        "expires_in": minted.expires_in,
        "expires_at": timestamp_text(int(minted.expires_at.timestamp())),
        "user_group": NamedGroupSerializer(minted.group).data,
    }


def active_answer(grant: EmbedGrant) -> dict[str, Any]:
    """The introspection answer for an active token."""
    return {
        "success": 1,
        "active": True,
        "user_group": NamedGroupSerializer(grant.group).data,
        "resource": grant.resource,
        "origin": grant.origin,
        "expires_at": timestamp_text(int(grant.expires_at.timestamp())),
        "variables": grant.variables,
    }

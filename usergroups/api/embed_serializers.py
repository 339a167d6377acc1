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
    PropertiesField,
    StrictBooleanField,
    StrictCharField,
    TokenRequestSerializer,
)
from usergroups.conf import usergroups_settings
from usergroups.embed.grant import EmbedGrant
from usergroups.embed.origins import MAX_ORIGIN_LENGTH, normalize_origin
from usergroups.embed.tokens import timestamp_text
from usergroups.services.embed import EndUserSpec
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


class MintEndUserSerializer(serializers.Serializer):
    """The mint's ``end_user``: the rules of ``end_user_id`` and of an end user's fields
    (``PUT /api/user/end-user``)."""

    id = StrictCharField()
    display_name = StrictCharField(required=False, allow_blank=True)
    attributes = PropertiesField(required=False)


class MintRequestSerializer(serializers.Serializer):
    user_group_id = StrictCharField()
    resource = StrictCharField(required=False)
    origin = OriginField(required=False)
    expires_in = ExpiresInField(required=False)
    params = ParamsField(required=False)
    end_user = MintEndUserSerializer(required=False)
    exclusive = StrictBooleanField(required=False, default=False)

    def get_fields(self) -> dict[str, serializers.Field]:
        # Read per request, as every setting is: override_settings applies at once.
        fields = super().get_fields()
        fields["origin"].required = usergroups_settings.EMBED_REQUIRE_ORIGIN
        return fields

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("exclusive") and "end_user" not in attrs:
            raise serializers.ValidationError(
                {"exclusive": [_("An exclusive token needs an end_user.")]}
            )
        return attrs

    def end_user_spec(self) -> EndUserSpec | None:
        """The validated ``end_user`` as the mint service takes it."""
        person = self.validated_data.get("end_user")
        if person is None:
            return None
        changes = {name: person[name] for name in ("display_name", "attributes") if name in person}
        return EndUserSpec(person["id"], changes)


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


class TrueField(StrictBooleanField):
    """``true`` only: a flag that names an axis."""

    def to_internal_value(self, data: Any) -> bool:
        if data is not True:
            raise serializers.ValidationError(_("Must be true."))
        return True


#: The axes of a revocation, each named by its field (CONTRACT section 7).
REVOCATION_AXES = {
    "user_group_id": "user_group",
    "end_user_id": "end_user",
    "embed_token": "embed_token",
    "all": "all",
}


class RevokeRequestSerializer(serializers.Serializer):
    """Exactly one axis: a group (``subtree``: and its descendants), an end user, one
    token, or the whole workspace."""

    user_group_id = StrictCharField(required=False)
    subtree = StrictBooleanField(required=False)
    end_user_id = StrictCharField(required=False)
    embed_token = EmbedTokenField(required=False)
    all = TrueField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        given = [name for name in REVOCATION_AXES if name in attrs]
        if len(given) != 1:
            message = _("Give exactly one of user_group_id, end_user_id, embed_token and all.")
            raise serializers.ValidationError(
                {name: [message] for name in given or REVOCATION_AXES}
            )
        if "subtree" in attrs and "user_group_id" not in attrs:
            raise serializers.ValidationError({"subtree": [_("Goes with user_group_id only.")]})
        return attrs

    @property
    def axis(self) -> str:
        """The axis asked for: a value of :data:`REVOCATION_AXES`."""
        return next(
            REVOCATION_AXES[name] for name in REVOCATION_AXES if name in self.validated_data
        )


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
        "end_user_id": grant.end_user_id,
        "variables": grant.variables,
        "variable_sources": grant.variable_sources,
    }

"""Request validation and answer shapes of ``/api/user/embed-token`` (CONTRACT section 6).

Strict like the rest of the API: strings are strings, integers are integers (``60`` or
``60.0``, as JSON Schema counts them; not ``true``, not ``60.5``, not ``"60"``), and every
bad field is named in ``fields``.
"""

from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from usergroups.api.serializers import (
    Answer,
    NamedGroupSerializer,
    PropertiesField,
    RequestSerializer,
    StrictBooleanField,
    StrictCharField,
    TokenRequestSerializer,
)
from usergroups.conf import usergroups_settings
from usergroups.embed.grant import EmbedGrant
from usergroups.embed.origins import MAX_ORIGIN_LENGTH, normalize_origin
from usergroups.embed.tokens import MAX_TOKEN_BYTES, timestamp_text
from usergroups.services.embed import EndUserSpec
from usergroups.validators import json_integer, validate_properties

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
        seconds = json_integer(data)
        if seconds is None or not MIN_EXPIRES_IN <= seconds <= longest:
            raise serializers.ValidationError(
                _("Must be an integer number of seconds from %(min)s to %(max)s.")
                % {"min": MIN_EXPIRES_IN, "max": longest}
            )
        return seconds


class ParamsField(serializers.Field):
    """Locked variables: the rules of properties, at most MAX_PARAMS_BYTES."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        try:
            return validate_properties(data, max_bytes=MAX_PARAMS_BYTES)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None


class MintEndUserSerializer(serializers.Serializer):
    """The mint's ``end_user``: the rules of ``end_user_id`` and of an end user's fields
    (``PUT /api/user/end-user``)."""

    id = StrictCharField(help_text="The end user's id: created if missing.")
    display_name = StrictCharField(required=False, allow_blank=True)
    attributes = PropertiesField(required=False)


class MintRequestSerializer(RequestSerializer):
    """The token to mint: for which group and person, for what, where and how long."""

    true_needs = {"exclusive": "end_user"}

    user_group_id = StrictCharField()
    resource = StrictCharField(
        required=False, help_text="What is embedded (a dashboard id): a host view may demand it."
    )
    origin = OriginField(
        required=False,
        help_text="The web origin `http(s)://host[:port]` the token is locked to, nothing "
        "after it; kept lowercased, without the scheme's default port. A token minted "
        "without one is valid from any origin (required when EMBED_REQUIRE_ORIGIN is set).",
    )
    expires_in = ExpiresInField(
        required=False,
        help_text="Seconds the token lives, up to EMBED_TOKEN_MAX_SECONDS; default "
        "EMBED_TOKEN_SECONDS.",
    )
    params = ParamsField(
        required=False,
        help_text="Locked variables laid over the group's computed properties and the end "
        "user's attributes; may not replace a top-level key they set unless the key also "
        "has `write` (400 naming `params`).",
    )
    end_user = MintEndUserSerializer(required=False)
    exclusive = StrictBooleanField(
        required=False,
        default=False,
        help_text="Needs `end_user`: revokes the person's earlier tokens in every group.",
    )

    def get_fields(self) -> dict[str, serializers.Field]:
        # Read per request, as every setting is: override_settings applies at once.
        fields = super().get_fields()
        fields["origin"].required = usergroups_settings.EMBED_REQUIRE_ORIGIN
        return fields

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
    """The embed token to judge."""

    embed_token = EmbedTokenField(
        help_text="Any string: a malformed or expired one is just inactive."
    )


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


class RevokeRequestSerializer(RequestSerializer):
    """What to revoke: exactly one axis."""

    exactly_one_of = tuple(REVOCATION_AXES)
    only_with = {"subtree": "user_group_id"}

    user_group_id = StrictCharField(required=False, help_text="A group's tokens.")
    subtree = StrictBooleanField(
        required=False, help_text="With `user_group_id` only: its descendants' tokens too."
    )
    end_user_id = StrictCharField(
        required=False, help_text="The person's tokens, in every group of the workspace."
    )
    embed_token = EmbedTokenField(
        required=False,
        help_text="That one token; one that is not a live token of this workspace is 404 "
        "`not_found`.",
    )
    all = TrueField(required=False, help_text="Every token of the workspace.")

    @property
    def axis(self) -> str:
        """The axis asked for: a value of :data:`REVOCATION_AXES`."""
        return next(
            REVOCATION_AXES[name] for name in REVOCATION_AXES if name in self.validated_data
        )


class MintAnswer(Answer):
    embed_token = serializers.CharField(max_length=MAX_TOKEN_BYTES)
    expires_in = serializers.IntegerField(min_value=MIN_EXPIRES_IN)
    expires_at = serializers.DateTimeField()
    user_group = NamedGroupSerializer()


class IntrospectAnswer(Answer):
    """An inactive token's answer is ``active`` alone."""

    active = serializers.BooleanField()
    user_group = NamedGroupSerializer(required=False)
    resource = serializers.CharField(required=False, allow_null=True)
    origin = serializers.CharField(required=False, allow_null=True)
    expires_at = serializers.DateTimeField(required=False)
    end_user_id = serializers.CharField(required=False, allow_null=True)
    # JSONField, not DictField: a generated client would get a class for each.
    variables = serializers.JSONField(
        required=False,
        help_text="The group's computed properties, the end user's attributes, then `params`.",
    )
    variable_sources = serializers.JSONField(
        required=False,
        help_text='Per key of `variables`: `"user_group:<provided_id>"`, `"end_user"` or '
        '`"params"`.',
    )


class RevokeAnswer(Answer):
    revoked = serializers.ChoiceField(choices=list(REVOCATION_AXES.values()))
    user_group = NamedGroupSerializer(required=False, help_text="Group axis only.")


class JWK(serializers.Serializer):
    """A public key (RFC 7517); ``y`` for a P-256 key only."""

    kty = serializers.CharField()
    crv = serializers.CharField()
    x = serializers.CharField()
    y = serializers.CharField(required=False)
    kid = serializers.CharField()
    alg = serializers.CharField()
    use = serializers.CharField()


class JWKSet(serializers.Serializer):
    keys = serializers.ListField(child=JWK())


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

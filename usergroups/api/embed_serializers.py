"""Request validation and answer shapes of ``/api/user/embed-token`` (CONTRACT section 6).

Strict like the rest of the API: strings are strings, integers are integers (not
``true``, not ``60.0``, not ``"60"``), and every bad field is named in ``fields``.
"""

from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers
from rest_framework.fields import empty

from usergroups.api.serializers import StrictCharField, TokenRequestSerializer
from usergroups.conf import usergroups_settings
from usergroups.embed.grant import EmbedGrant
from usergroups.embed.origins import MAX_ORIGIN_LENGTH, normalize_origin
from usergroups.embed.tokens import timestamp_text
from usergroups.records import GroupRecord
from usergroups.validators import check_text, validate_properties

if TYPE_CHECKING:
    from usergroups.services.embed import MintedGroup

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

    def run_validation(self, data: Any = empty) -> Any:
        # Every embedded view mints: valid input is checked by the validators the fields
        # run, without DRF's per-request deep copy of the fields (and by the fast path,
        # usergroups.fastpath); anything else goes the DRF way, for its exact errors.
        valid = valid_mint(data)
        return valid if valid is not None else super().run_validation(data)


def valid_mint(data: Any) -> dict[str, Any] | None:
    """``validated_data`` of :class:`MintRequestSerializer` when ``data`` is valid, else
    None. tests/test_hot_path.py holds the two to the same answers."""
    if type(data) is not dict:
        return None
    try:
        valid: dict[str, Any] = {"user_group_id": check_text(data["user_group_id"])}
        if "resource" in data:
            valid["resource"] = check_text(data["resource"])
        if "origin" not in data and usergroups_settings.EMBED_REQUIRE_ORIGIN:
            return None
        if "origin" in data:
            origin = data["origin"]
            valid["origin"] = normalize_origin(origin) if isinstance(origin, str) else None
            if valid["origin"] is None:
                return None
        if "expires_in" in data:
            seconds = data["expires_in"]
            longest = usergroups_settings.EMBED_TOKEN_MAX_SECONDS
            if type(seconds) is not int or not MIN_EXPIRES_IN <= seconds <= longest:
                return None
            valid["expires_in"] = seconds
        if "params" in data:
            valid["params"] = validate_properties(data["params"], max_bytes=MAX_PARAMS_BYTES)
    except (KeyError, DjangoValidationError):
        return None
    return valid


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


class EmbedGroupSerializer(serializers.Serializer):
    """The group as the embed-token answers name it: no token, no properties."""

    team_id = serializers.IntegerField(read_only=True)
    name = serializers.CharField(read_only=True)
    provided_id = serializers.CharField(read_only=True)

    def to_representation(self, group: GroupRecord) -> dict[str, Any]:
        return embed_group_representation(group)


def embed_group_representation(group: "GroupRecord | MintedGroup") -> dict[str, Any]:
    """What :class:`EmbedGroupSerializer`'s declared fields give (tests/test_hot_path.py
    holds the two equal), without DRF's per-instance deep copy of every field: every
    mint answers it."""
    team_id = group.team_id
    return {
        "team_id": None if team_id is None else int(team_id),
        "name": None if group.name is None else str(group.name),
        "provided_id": None if group.provided_id is None else str(group.provided_id),
    }


def active_answer(grant: EmbedGrant) -> dict[str, Any]:
    """The introspection answer for an active token."""
    return {
        "success": 1,
        "active": True,
        "user_group": embed_group_representation(grant.group),
        "resource": grant.resource,
        "origin": grant.origin,
        "expires_at": timestamp_text(int(grant.expires_at.timestamp())),
        "variables": grant.variables,
    }

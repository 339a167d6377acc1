"""Request validation and response shapes of ``/api/user``.

Each shape of a group in an answer has one serializer here. They read a
:class:`~usergroups.records.GroupRecord` (:class:`NamedGroupSerializer` also a minted
token's group), and nothing else.
"""

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from usergroups.api.exceptions import TokenUnavailable
from usergroups.records import GroupRecord
from usergroups.validators import MAX_ID_LENGTH, check_text, validate_mapping, validate_properties


class StrictCharField(serializers.CharField):
    """A CharField that takes strings only (DRF's would turn ``12`` into ``"12"``) and
    keeps them as sent: no trimming, since ids are echoed back byte for byte."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        kwargs.setdefault("max_length", MAX_ID_LENGTH)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return check_text(super().to_internal_value(data), allow_empty=self.allow_blank)


class MappingField(serializers.Field):
    def to_internal_value(self, data: Any) -> dict[str, str]:
        return validate_mapping(data)

    def to_representation(self, value: dict[str, str]) -> dict[str, str]:
        return value


class PropertiesField(serializers.Field):
    def to_internal_value(self, data: Any) -> dict[str, Any]:
        return validate_properties(data)

    def to_representation(self, value: Any) -> Any:
        return value


class StrictBooleanField(serializers.BooleanField):
    """A BooleanField that takes JSON ``true`` and ``false`` only (DRF's would also take
    ``"yes"``, ``1``, ``"on"``...)."""

    def to_internal_value(self, data: Any) -> bool:
        if type(data) is not bool:
            self.fail("invalid", input=data)
        return data


class GetOrCreateRequestSerializer(serializers.Serializer):
    user_group_id = StrictCharField()
    name = StrictCharField(required=False, allow_null=True, allow_blank=True)
    mapping = MappingField(required=False, allow_null=True)
    properties = PropertiesField(required=False, allow_null=True)
    # Read on create only, like the fields above.
    parent_user_group_id = StrictCharField(required=False, allow_null=True)


class TokenRequestSerializer(serializers.Serializer):
    """A request that may carry a group token. DRF's repr of a serializer shows the data
    it was given, and error reports print every frame variable: leave the data out."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


class RotateRequestSerializer(TokenRequestSerializer):
    current_token = StrictCharField()


class TokenField(serializers.Field):
    """The group's current token, or 503 when no configured secret opens it."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, group: GroupRecord) -> str:
        token = group.token  # unsealed on each read: once
        if token is None:
            raise TokenUnavailable()
        return token


class NamedGroupSerializer(serializers.Serializer):
    """A group by its ids and name only: as a delete and the embed-token answers report it."""

    team_id = serializers.IntegerField(read_only=True)
    name = serializers.CharField(read_only=True)
    provided_id = serializers.CharField(read_only=True)


class RotatedGroupSerializer(serializers.Serializer):
    """A user group as the rotate operation reports it."""

    team_id = serializers.IntegerField(read_only=True)
    token = TokenField()
    name = serializers.CharField(read_only=True)
    provided_id = serializers.CharField(read_only=True)


class UserGroupSerializer(RotatedGroupSerializer):
    """A user group as get-or-create and update report it."""

    properties = serializers.JSONField(read_only=True, allow_null=True)
    mapping = serializers.DictField(child=serializers.CharField(), read_only=True)
    parent_user_group_id = serializers.CharField(read_only=True, allow_null=True)
    computed_properties = serializers.JSONField(read_only=True)
    computed_mapping = serializers.DictField(child=serializers.CharField(), read_only=True)


class UpdateRequestSerializer(serializers.Serializer):
    """PUT: the group named by ``user_group_id``; given fields replace stored ones."""

    user_group_id = StrictCharField()
    new_user_group_id = StrictCharField(required=False)
    name = StrictCharField(required=False, allow_blank=True)
    mapping = MappingField(required=False, allow_null=True)
    properties = PropertiesField(required=False, allow_null=True)
    # null detaches; another group's id moves this one (with its subtree) under it.
    parent_user_group_id = StrictCharField(required=False, allow_null=True)

    def changes(self) -> dict[str, Any]:
        data = self.validated_data
        fields = ("name", "properties", "parent_user_group_id")
        changes = {key: data[key] for key in fields if key in data}
        if "mapping" in data:
            changes["mapping"] = data["mapping"] or {}
        if "new_user_group_id" in data:
            changes["provided_id"] = data["new_user_group_id"]
        return changes


class DeleteRequestSerializer(TokenRequestSerializer):
    """DELETE: the group named by ``user_group_id`` or holding ``current_token``."""

    user_group_id = StrictCharField(required=False)
    current_token = StrictCharField(required=False)
    # Without it, a group that has children is not deleted (409).
    cascade = StrictBooleanField(required=False, default=False)

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        if ("user_group_id" in data) == ("current_token" in data):
            raise serializers.ValidationError(
                {"user_group_id": [_("Give exactly one of user_group_id and current_token.")]}
            )
        return data


class ListQuerySerializer(serializers.Serializer):
    page = serializers.IntegerField(min_value=1, max_value=1_000_000, default=1)
    page_size = serializers.IntegerField(min_value=1, max_value=500, default=100)
    provided_id_prefix = StrictCharField(required=False, allow_blank=True)
    # Only the direct children of this group.
    parent_user_group_id = StrictCharField(required=False)


class ListedGroupSerializer(serializers.Serializer):
    """A group in a list: no token, which only the single-group operations show."""

    team_id = serializers.IntegerField(read_only=True)
    name = serializers.CharField(read_only=True)
    provided_id = serializers.CharField(read_only=True)
    parent_user_group_id = serializers.CharField(read_only=True, allow_null=True)
    properties = serializers.JSONField(read_only=True, allow_null=True)
    mapping = serializers.DictField(child=serializers.CharField(), read_only=True)
    created_at = serializers.DateTimeField(read_only=True)
    updated_at = serializers.DateTimeField(read_only=True)

"""Request validation and response shapes of ``/api/user``."""

from typing import Any

from rest_framework import serializers

from .exceptions import TokenUnavailable
from .validators import MAX_ID_LENGTH, check_text, validate_mapping, validate_properties


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


class GetOrCreateRequestSerializer(serializers.Serializer):
    user_group_id = StrictCharField()
    name = StrictCharField(required=False, allow_null=True, allow_blank=True)
    mapping = MappingField(required=False, allow_null=True)
    properties = PropertiesField(required=False, allow_null=True)


class RotateRequestSerializer(serializers.Serializer):
    current_token = StrictCharField()


class TokenField(serializers.Field):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, group: Any) -> str:
        token = group.token
        if token is None:
            raise TokenUnavailable()
        return token


class DeletedGroupSerializer(serializers.Serializer):
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
    """A user group as get-or-create reports it."""

    properties = serializers.JSONField(read_only=True, allow_null=True)
    mapping = serializers.DictField(child=serializers.CharField(), read_only=True)


class UpdateRequestSerializer(serializers.Serializer):
    """PUT: the group named by ``user_group_id``; given fields replace stored ones."""

    user_group_id = StrictCharField()
    new_user_group_id = StrictCharField(required=False)
    name = StrictCharField(required=False, allow_blank=True)
    mapping = MappingField(required=False, allow_null=True)
    properties = PropertiesField(required=False, allow_null=True)

    def changes(self) -> dict[str, Any]:
        data = self.validated_data
        changes = {key: data[key] for key in ("name", "properties") if key in data}
        if "mapping" in data:
            changes["mapping"] = data["mapping"] or {}
        if "new_user_group_id" in data:
            changes["provided_id"] = data["new_user_group_id"]
        return changes


class DeleteRequestSerializer(serializers.Serializer):
    """DELETE: the group named by ``user_group_id`` or holding ``current_token``."""

    user_group_id = StrictCharField(required=False)
    current_token = StrictCharField(required=False)

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        if ("user_group_id" in data) == ("current_token" in data):
            raise serializers.ValidationError(
                {"user_group_id": ["Give exactly one of user_group_id and current_token."]}
            )
        return data


class ListQuerySerializer(serializers.Serializer):
    page = serializers.IntegerField(min_value=1, max_value=1_000_000, default=1)
    page_size = serializers.IntegerField(min_value=1, max_value=500, default=100)
    provided_id_prefix = StrictCharField(required=False, allow_blank=True)


class ListedGroupSerializer(serializers.Serializer):
    """A group in a list: no token, which only the single-group operations show."""

    team_id = serializers.IntegerField(read_only=True)
    name = serializers.CharField(read_only=True)
    provided_id = serializers.CharField(read_only=True)
    properties = serializers.JSONField(read_only=True, allow_null=True)
    mapping = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField(read_only=True)
    updated_at = serializers.DateTimeField(read_only=True)

    def get_mapping(self, group) -> dict[str, str]:
        return {m.schema_id: m.data_source_id for m in group.mappings.all()}

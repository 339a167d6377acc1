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

"""Request validation and response shapes of ``/api/user/end-user`` (CONTRACT section 7).

The fields are the group API's strict ones: the same rules for an id, a name and a JSON
object, from :mod:`usergroups.validators`.
"""

from typing import Any

from rest_framework import serializers

from usergroups.api.serializers import (
    Answer,
    PageAnswer,
    PropertiesField,
    StrictBooleanField,
    StrictCharField,
)
from usergroups.services.end_users import CHANGEABLE


class EndUserIdSerializer(serializers.Serializer):
    """GET and DELETE: the end user named by ``end_user_id``; DELETE's answer too."""

    end_user_id = StrictCharField()


class PutEndUserSerializer(serializers.Serializer):
    """PUT: creates the end user or changes the fields given."""

    end_user_id = StrictCharField()
    display_name = StrictCharField(required=False, allow_blank=True)
    attributes = PropertiesField(required=False)
    disabled = StrictBooleanField(required=False)

    def changes(self) -> dict[str, Any]:
        data = self.validated_data
        return {name: data[name] for name in CHANGEABLE if name in data}


class EndUserListQuerySerializer(serializers.Serializer):
    page = serializers.IntegerField(min_value=1, max_value=1_000_000, default=1)
    limit = serializers.IntegerField(min_value=1, max_value=500, default=100)
    end_user_id_prefix = StrictCharField(required=False, allow_blank=True)


class EndUserSerializer(serializers.Serializer):
    """An end user as every answer shows it (reads an :class:`EndUserRecord`)."""

    end_user_id = serializers.CharField(read_only=True)
    display_name = serializers.CharField(read_only=True)
    attributes = serializers.JSONField(read_only=True)
    disabled = serializers.BooleanField(read_only=True)
    created_at = serializers.DateTimeField(read_only=True)
    updated_at = serializers.DateTimeField(read_only=True)


class PutEndUserAnswer(Answer):
    created = serializers.BooleanField()
    end_user = EndUserSerializer()


class EndUserAnswer(Answer):
    end_user = EndUserSerializer()


class DeleteEndUserAnswer(Answer):
    end_user = EndUserIdSerializer()


class EndUserListAnswer(PageAnswer):
    limit = serializers.IntegerField(min_value=1)
    end_users = EndUserSerializer(many=True)

"""Request validation and response shapes of ``/api/user``.

Each shape of a group in an answer has one serializer here. They read a
:class:`~usergroups.records.GroupRecord` (:class:`NamedGroupSerializer` also a minted
token's group), and nothing else.
"""

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from usergroups.errors.failures import TokenUnavailable
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
        value = super().to_internal_value(data)
        return check_text(value, self.max_length or MAX_ID_LENGTH, allow_empty=self.allow_blank)


class MappingField(serializers.Field):
    """Schema id to data source id (:func:`usergroups.validators.validate_mapping`)."""

    def to_internal_value(self, data: Any) -> dict[str, str]:
        return validate_mapping(data)

    def to_representation(self, value: dict[str, str]) -> dict[str, str]:
        return value


class PropertiesField(serializers.Field):
    """A JSON object within the size and depth limits (``validate_properties``)."""

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


PARENT_HELP = (
    "A group of the same workspace: one it does not have is 404 `not_found`. A cycle, or "
    "a change that makes any group deeper than MAX_HIERARCHY_DEPTH, is 409 `conflict`."
)


class RequestSerializer(serializers.Serializer):
    """A request body whose rules across fields are data: :meth:`validate` enforces
    them and the OpenAPI description (usergroups.api.openapi) states them."""

    #: Exactly one of these fields must be given.
    exactly_one_of: tuple[str, ...] = ()
    #: A field that may be given only with another one.
    only_with: dict[str, str] = {}
    #: A boolean field that, when true, needs another one.
    true_needs: dict[str, str] = {}

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        given = [name for name in self.exactly_one_of if name in attrs]
        if self.exactly_one_of and len(given) != 1:
            *first, last = self.exactly_one_of
            message = _("Give exactly one of %(names)s and %(last)s.") % {
                "names": ", ".join(first),
                "last": last,
            }
            raise serializers.ValidationError(
                {name: [message] for name in given or self.exactly_one_of}
            )
        for name, other in self.only_with.items():
            if name in attrs and other not in attrs:
                message = _("Goes with %(other)s only.") % {"other": other}
                raise serializers.ValidationError({name: [message]})
        for name, other in self.true_needs.items():
            if attrs.get(name) and other not in attrs:
                message = _("Needs %(other)s.") % {"other": other}
                raise serializers.ValidationError({name: [message]})
        return attrs


class GetOrCreateRequestSerializer(serializers.Serializer):
    """The group to get, or to create with these fields (all but the id read on create only)."""

    user_group_id = StrictCharField()
    name = StrictCharField(
        required=False, allow_null=True, allow_blank=True, help_text="Default: the id."
    )
    mapping = MappingField(required=False, allow_null=True)
    properties = PropertiesField(required=False, allow_null=True)
    parent_user_group_id = StrictCharField(required=False, allow_null=True, help_text=PARENT_HELP)


class TokenRequestSerializer(serializers.Serializer):
    """A request that may carry a group token. DRF's repr of a serializer shows the data
    it was given, and error reports print every frame variable: leave the data out."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


class RotateRequestSerializer(TokenRequestSerializer):
    """The token to replace."""

    current_token = StrictCharField()


class TokenField(serializers.Field):
    """The group's current token, or 503 when no configured secret opens it."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault(
            "help_text",
            "The group's current token: the long-lived secret of the caller's backend, "
            "never for a browser.",
        )
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, group: GroupRecord) -> str:
        return token_of(group)


def token_of(group: GroupRecord) -> str:
    """The group's token as an answer shows it: 503 when no configured secret opens it."""
    token = group.token  # unsealed on each read: once
    if token is None:
        raise TokenUnavailable()
    return token


# The group answers below are on every get and mint. Their fields declare the shape (the
# OpenAPI description reads them); each writes its record's answer in one step, which
# tests/test_hot_path.py holds equal to DRF's walk of those fields (most of a get's
# serializing time, which builds and walks every field for each answer).


class NamedGroupSerializer(serializers.Serializer):
    """A group by its ids and name only: as a delete and the embed-token answers report it."""

    team_id = serializers.IntegerField(read_only=True)
    name = serializers.CharField(read_only=True)
    provided_id = serializers.CharField(read_only=True)

    def to_representation(self, group: GroupRecord) -> dict[str, Any]:
        return {"team_id": group.team_id, "name": group.name, "provided_id": group.provided_id}


class RotatedGroupSerializer(serializers.Serializer):
    """A user group as the rotate operation reports it."""

    team_id = serializers.IntegerField(read_only=True)
    token = TokenField()
    name = serializers.CharField(read_only=True)
    provided_id = serializers.CharField(read_only=True)

    def to_representation(self, group: GroupRecord) -> dict[str, Any]:
        return {
            "team_id": group.team_id,
            "token": token_of(group),
            "name": group.name,
            "provided_id": group.provided_id,
        }


class UserGroupSerializer(RotatedGroupSerializer):
    """A user group as get-or-create and update report it."""

    properties = PropertiesField(read_only=True, allow_null=True)
    mapping = serializers.DictField(child=serializers.CharField(), read_only=True)
    parent_user_group_id = serializers.CharField(read_only=True, allow_null=True)
    computed_properties = serializers.JSONField(
        read_only=True,
        help_text="The ancestors' properties merged from the root down, then the group's "
        "own; a top-level key of a deeper group wins.",
    )
    computed_mapping = serializers.DictField(child=serializers.CharField(), read_only=True)

    def to_representation(self, group: GroupRecord) -> dict[str, Any]:
        return {
            **super().to_representation(group),
            "properties": group.properties,
            "mapping": dict(group.mapping),
            "parent_user_group_id": group.parent_user_group_id,
            "computed_properties": group.computed_properties,
            "computed_mapping": dict(group.computed_mapping),
        }


class UpdateRequestSerializer(serializers.Serializer):
    """PUT: the group named by ``user_group_id``; given fields replace stored ones."""

    user_group_id = StrictCharField()
    new_user_group_id = StrictCharField(
        required=False, help_text="Renames the group; another group's id is 409 `conflict`."
    )
    name = StrictCharField(required=False, allow_blank=True)
    mapping = MappingField(required=False, allow_null=True)
    properties = PropertiesField(required=False, allow_null=True, help_text="null clears them.")
    parent_user_group_id = StrictCharField(
        required=False,
        allow_null=True,
        help_text="null detaches the group; another group's id moves it (with its subtree) "
        "under that one. " + PARENT_HELP,
    )

    def changes(self) -> dict[str, Any]:
        data = self.validated_data
        fields = ("name", "properties", "parent_user_group_id")
        changes = {key: data[key] for key in fields if key in data}
        if "mapping" in data:
            changes["mapping"] = data["mapping"] or {}
        if "new_user_group_id" in data:
            changes["provided_id"] = data["new_user_group_id"]
        return changes


class DeleteRequestSerializer(TokenRequestSerializer, RequestSerializer):
    """The group to delete, named by exactly one of ``user_group_id`` and ``current_token``."""

    exactly_one_of = ("user_group_id", "current_token")

    user_group_id = StrictCharField(required=False)
    current_token = StrictCharField(required=False)
    cascade = StrictBooleanField(
        required=False,
        default=False,
        help_text="Delete the descendants too; without it, a group that has any is not "
        "deleted (409).",
    )


class ListQuerySerializer(serializers.Serializer):
    page = serializers.IntegerField(min_value=1, max_value=1_000_000, default=1)
    page_size = serializers.IntegerField(min_value=1, max_value=500, default=100)
    provided_id_prefix = StrictCharField(required=False, allow_blank=True)
    parent_user_group_id = StrictCharField(
        required=False, help_text="Only the direct children of this group."
    )


class ListedGroupSerializer(serializers.Serializer):
    """A group in a list: no token, which only the single-group operations show."""

    team_id = serializers.IntegerField(read_only=True)
    name = serializers.CharField(read_only=True)
    provided_id = serializers.CharField(read_only=True)
    parent_user_group_id = serializers.CharField(read_only=True, allow_null=True)
    properties = PropertiesField(read_only=True, allow_null=True)
    mapping = serializers.DictField(child=serializers.CharField(), read_only=True)
    created_at = serializers.DateTimeField(read_only=True)
    updated_at = serializers.DateTimeField(read_only=True)


# Answers: each view writes its answer as a dict; these declare the shapes, which the
# OpenAPI description (usergroups.api.openapi) states.


class SuccessField(serializers.Field):
    """``success``: 1 in every answer, 0 in a failure's."""

    def __init__(self, value: int = 1, **kwargs: Any) -> None:
        self.value = value
        super().__init__(**kwargs)


class Answer(serializers.Serializer):
    success = SuccessField()


class GetOrCreateAnswer(Answer):
    new_user_group = serializers.BooleanField()
    user_group = UserGroupSerializer()


class RotateAnswer(Answer):
    user_group = RotatedGroupSerializer()


class UserGroupAnswer(Answer):
    user_group = UserGroupSerializer()


class DeleteAnswer(Answer):
    user_group = NamedGroupSerializer()
    deleted_count = serializers.IntegerField(
        required=False, min_value=1, help_text="Only with `cascade`: the groups deleted."
    )


class PageAnswer(Answer):
    total_count = serializers.IntegerField(min_value=0)
    page = serializers.IntegerField(min_value=1)


class ListAnswer(PageAnswer):
    page_size = serializers.IntegerField(min_value=1)
    user_groups = ListedGroupSerializer(many=True)

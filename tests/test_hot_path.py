"""The hot path (get of an existing group) stays cheap.

Issue 5: a get costs at most two queries and writes nothing; a key or token that cannot be
valid is refused before the database.
"""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework import serializers

from tests.support.api import get_or_create, rotate
from tests.support.factories import SchemaMappingFactory, UserGroupFactory
from tests.support.queries import only_reads
from usergroups import crypto, services
from usergroups.api.serializers import (
    NamedGroupSerializer,
    RotatedGroupSerializer,
    UserGroupSerializer,
)
from usergroups.errors.failures import TokenUnavailable
from usergroups.models import APIKey, UserGroup
from usergroups.records import RECORD_FIELDS, GroupRecord

GOOD_KEY_BODY = "A" * 43


# The key was used a moment ago: authenticating costs one query and writes nothing.
pytestmark = pytest.mark.usefixtures("recently_used_key")


@pytest.fixture
def mapped_group(group):
    for schema_id, source in (("zeta", "z-1"), ("alpha", "a-1"), ("mid", "m-1")):
        SchemaMappingFactory(group=group, schema_id=schema_id, data_source_id=source)
    return group


# --- query counts ----------------------------------------------------------------------


def test_get_of_an_existing_group_is_two_selects(api_client, mapped_group):
    with CaptureQueriesContext(connection) as queries:
        response = get_or_create(
            api_client,
            {"user_group_id": mapped_group.provided_id, "name": "ignored", "mapping": {"x": "y"}},
        )
    assert response.status_code == 200
    body = response.json()
    assert body["new_user_group"] is False
    assert body["user_group"]["token"] == mapped_group.token
    assert len(queries) == 2, [q["sql"] for q in queries]
    assert only_reads(queries)  # the group's is a WITH RECURSIVE walk up its ancestors


@pytest.mark.parametrize(
    "key",
    [
        "ugt_" + GOOD_KEY_BODY,  # a group token's prefix
        "ugx_" + GOOD_KEY_BODY,  # wrong prefix
        "UGK_" + GOOD_KEY_BODY,  # prefixes are case-sensitive
        "ugk_" + GOOD_KEY_BODY[:-1],  # one short
        "ugk_" + GOOD_KEY_BODY + "A",  # one long
        "ugk_" + GOOD_KEY_BODY[:-1] + "=",  # outside the URL-safe alphabet
        "ugk_" + GOOD_KEY_BODY[:-1] + "é",  # not ASCII
        "ugk_" + "A" * 4000,  # very long
        "",
    ],
    ids=lambda k: repr(k[:8]) + f"/{len(k)}",
)
def test_a_key_that_cannot_be_valid_costs_no_query(anon_api_client, db, key):
    anon_api_client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    with CaptureQueriesContext(connection) as queries:
        response = get_or_create(anon_api_client, {"user_group_id": "a"})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"
    assert len(queries) == 0


def test_a_well_formed_unknown_key_costs_one_query(anon_api_client, db):
    anon_api_client.credentials(HTTP_AUTHORIZATION=f"Token {crypto.new_api_key()}")
    with CaptureQueriesContext(connection) as queries:
        assert get_or_create(anon_api_client, {"user_group_id": "a"}).status_code == 401
    assert len(queries) == 1


@pytest.mark.parametrize(
    "token",
    [
        "ugk_" + GOOD_KEY_BODY,  # an API key's prefix
        "ugt_" + GOOD_KEY_BODY[:-1],
        "ugt_" + GOOD_KEY_BODY + "A",
        "ugt_" + GOOD_KEY_BODY[:-1] + "/",
        "ugt_" + GOOD_KEY_BODY[:-1] + "\u00e9",
        "x",
    ],
    ids=lambda t: repr(t[:8]) + f"/{len(t)}",
)
def test_a_token_that_cannot_be_valid_costs_only_the_key_lookup(api_client, group, token):
    with CaptureQueriesContext(connection) as queries:
        response = rotate(api_client, {"current_token": token})
    assert response.status_code == 404
    assert len(queries) == 1  # the API key, nothing for the token
    assert "usergroups_usergroup" not in queries[0]["sql"]


# --- no cache: revocation and rotation take effect on the next request -----------------


def test_revocation_and_rotation_take_effect_on_the_next_request(api_client, api_key, group):
    assert get_or_create(api_client, {"user_group_id": group.provided_id}).status_code == 200
    new_token = rotate(api_client, {"current_token": group.token}).json()["user_group"]["token"]
    body = get_or_create(api_client, {"user_group_id": group.provided_id}).json()
    assert body["user_group"]["token"] == new_token
    assert rotate(api_client, {"current_token": group.token}).status_code == 404
    services.keys.revoke_key(APIKey.objects.get(pk=api_key.pk))
    assert get_or_create(api_client, {"user_group_id": group.provided_id}).status_code == 401


# --- a group's read gives what is stored ---------------------------------------------


def test_find_group_matches_the_orm(workspace):
    properties = {"nested": {"list": [1, 2.5, None, True, "ü"]}, "empty": {}, "n": 0}
    group = UserGroupFactory(workspace=workspace, properties=properties, name="Ünïcode")
    for schema_id, source in (("zeta", "z-1"), ("alpha", "a-1"), ("mid", "m-1")):
        SchemaMappingFactory(group=group, schema_id=schema_id, data_source_id=source)
    UserGroupFactory(workspace=workspace)  # another group, not to be mixed in

    found = services.groups.find_group(workspace.pk, group.provided_id)
    stored = UserGroup.objects.get(pk=group.pk)
    for name in RECORD_FIELDS:
        assert getattr(found, name) == getattr(stored, name), name
    assert found.properties == properties
    # The mapping, in the records' one order: by schema id.
    assert list(found.mapping.items()) == [("alpha", "a-1"), ("mid", "m-1"), ("zeta", "z-1")]
    assert found.token == group.token


def test_find_group_without_mappings_or_properties(workspace):
    group = UserGroupFactory(workspace=workspace, properties=None)
    found = services.groups.find_group(workspace.pk, group.provided_id)
    assert found.mapping == {} and found.properties is None


def test_find_group_is_exact_and_per_workspace(workspace, other_workspace):
    group = UserGroupFactory(workspace=workspace, provided_id="Acme")
    assert services.groups.find_group(workspace.pk, "Acme").team_id == group.pk
    assert services.groups.find_group(workspace.pk, "acme") is None
    assert services.groups.find_group(workspace.pk, "Acme ") is None
    assert services.groups.find_group(other_workspace.pk, "Acme") is None


def test_the_api_key_row_is_loaded_whole(api_key):
    from usergroups.services.keys import find_api_key

    found = find_api_key(api_key.key)
    stored = APIKey.objects.get(pk=api_key.pk)
    for field in APIKey._meta.concrete_fields:
        assert getattr(found, field.attname) == getattr(stored, field.attname), field.name
    assert find_api_key(api_key.key[:-1] + ("B" if api_key.key[-1] != "B" else "C")) is None


# --- the answer ----------------------------------------------------------------------


def test_a_token_no_secret_opens_is_503(workspace, settings):
    group = GroupRecord.from_model(UserGroupFactory(workspace=workspace), [])
    settings.SECRET_KEY = "another-secret-key-that-opens-nothing-0123456789abcdef"
    settings.SECRET_KEY_FALLBACKS = []
    for serializer_class in (UserGroupSerializer, RotatedGroupSerializer):
        with pytest.raises(TokenUnavailable):
            _ = serializer_class(group).data


def test_each_group_answer_is_what_its_declared_fields_give(workspace):
    """The group answers are written in one step; DRF's walk of their declared fields
    (which the OpenAPI description states) gives the same answer, key for key and in
    order, for a root, a child that inherits, and a group without properties or mapping."""
    root = UserGroupFactory(workspace=workspace, properties={"region": "EU", "n": [1, {}]})
    for schema_id, source in (("zeta", "z-1"), ("alpha", "a-1")):
        SchemaMappingFactory(group=root, schema_id=schema_id, data_source_id=source)
    child = UserGroupFactory(workspace=workspace, parent=root, properties={"n": 2})
    SchemaMappingFactory(group=child, schema_id="alpha", data_source_id="a-2")
    bare = UserGroupFactory(workspace=workspace, properties=None, name="")
    for group in (root, child, bare):
        record = services.groups.find_group(workspace.pk, group.provided_id)
        for serializer_class in (NamedGroupSerializer, RotatedGroupSerializer, UserGroupSerializer):
            written = serializer_class(record).data
            walked = serializers.Serializer.to_representation(serializer_class(), record)
            assert list(written) == list(serializer_class().fields)
            assert json.dumps(written) == json.dumps(walked), (serializer_class, group)

"""POST /api/user/embed-token/introspect: active tokens of this workspace, and
``{"success": 1, "active": false}`` and nothing more for every other token."""

import pytest
from django.test import override_settings

from tests.support.api import assert_error, client_for, send
from tests.support.embed import INTROSPECT_URL, clock_moved, introspect, minted
from tests.support.factories import APIKeyFactory, UserGroupFactory
from usergroups import services
from usergroups.embed import tokens

INACTIVE = {"success": 1, "active": False}


def test_an_active_token_is_described(api_client, workspace):
    parent = UserGroupFactory.create(workspace=workspace, properties={"tier": 1, "region": "EU"})
    group = UserGroupFactory.create(workspace=workspace, parent=parent, properties={"a": 1})
    token = minted(
        api_client,
        group.provided_id,
        resource="sales",
        origin="https://shop.example",
        params={"region": "US"},
    )
    body = introspect(api_client, token).json()
    expires_at = body.pop("expires_at")
    assert body == {
        "success": 1,
        "active": True,
        "user_group": {"team_id": group.pk, "name": group.name, "provided_id": group.provided_id},
        "resource": "sales",
        "origin": "https://shop.example",
        "end_user_id": None,
        "variables": {"tier": 1, "region": "US", "a": 1},
        "variable_sources": {
            "tier": f"user_group:{parent.provided_id}",
            "region": "params",
            "a": f"user_group:{group.provided_id}",
        },
    }
    assert expires_at == tokens.timestamp_text(tokens.verify(token).raw["exp"])


def test_resource_and_origin_are_null_when_not_given(api_client, group):
    body = introspect(api_client, minted(api_client, group.provided_id)).json()
    assert body["resource"] is None and body["origin"] is None
    assert body["variables"] == {"region": "EU"}


def test_introspection_costs_the_key_and_the_group(
    api_client, recently_used_key, group, django_assert_num_queries
):
    token = minted(api_client, group.provided_id)
    with django_assert_num_queries(2):
        assert introspect(api_client, token).json()["active"] is True


def test_another_workspaces_token_is_inactive(api_client, other_api_client, group):
    token = minted(api_client, group.provided_id)
    assert introspect(other_api_client, token).json() == INACTIVE


def test_an_expired_token_is_inactive(api_client, group):
    with clock_moved(-120):
        token = minted(api_client, group.provided_id, expires_in=60)
    assert introspect(api_client, token).json() == INACTIVE


def test_a_revoked_or_deleted_groups_token_is_inactive(api_client, group):
    token = minted(api_client, group.provided_id)
    services.embed.revoke_embed_tokens(group.pk)
    assert introspect(api_client, token).json() == INACTIVE
    token = minted(api_client, group.provided_id)
    services.groups.delete_group(group.workspace_id, provided_id=group.provided_id)
    assert introspect(api_client, token).json() == INACTIVE


@pytest.mark.parametrize(
    "token", ["", "garbage", "a.b.c", "eyJ.eyJ.x", "x" * 5000, "ugt_" + "A" * 43]
)
def test_malformed_tokens_are_inactive(api_client, group, token, django_assert_max_num_queries):
    with django_assert_max_num_queries(2):  # the key; never the group
        assert introspect(api_client, token).json() == INACTIVE


def test_a_token_of_another_audience_is_inactive(api_client, group):
    token = minted(api_client, group.provided_id)
    with override_settings(USERGROUPS={"EMBED_TOKEN_AUDIENCE": "other"}):
        assert introspect(api_client, token).json() == INACTIVE


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"embed_token": None},
        {"embed_token": 5},
        {"embed_token": ["x"]},
        {"embed_token": "a\x00b"},
    ],
)
def test_bad_input_is_invalid(api_client, body):
    response = send(api_client, "POST", body, path=INTROSPECT_URL)
    assert_error(response, 400, "invalid", fields=["embed_token"])


def test_the_embed_scope_is_needed(workspace, group, api_client):
    token = minted(api_client, group.provided_id)
    key = APIKeyFactory.create(workspace=workspace)
    key.set_scopes({"read"})
    key.save()
    assert_error(introspect(client_for(key.key), token), 403, "permission_denied")


def test_no_key_is_401(anon_api_client):
    assert_error(introspect(anon_api_client, "x"), 401, "not_authenticated")

"""POST /api/user: token rotation (CONTRACT.md section 3, tenancy from section 2)."""

import re
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from tests.support.api import API_URL, get_or_create, rotate
from tests.support.db_state import database_unchanged
from tests.support.factories import UserGroupFactory
from usergroups import crypto, signals
from usergroups.auth.group_token import resolve_group_token
from usergroups.models import UserGroup

TOKEN_SHAPE = re.compile(r"ugt_[A-Za-z0-9_-]{43}")


def rotated(response) -> dict:
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    return response.json()["user_group"]


def not_found(response) -> dict:
    assert response.status_code == 404, response.content
    return response.json()


def test_response_shape_is_exactly_the_contracts(api_client, group):
    response = rotate(api_client, {"current_token": group.token})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"success", "user_group"}
    assert body["success"] == 1 and type(body["success"]) is int
    new = body["user_group"]
    assert set(new) == {"team_id", "token", "name", "provided_id"}
    assert (new["team_id"], new["name"], new["provided_id"]) == (
        group.team_id,
        group.name,
        group.provided_id,
    )
    assert type(new["team_id"]) is int
    assert TOKEN_SHAPE.fullmatch(new["token"])


def test_new_token_differs_and_is_what_get_or_create_returns(api_client, group):
    new_token = rotated(rotate(api_client, {"current_token": group.token}))["token"]
    assert new_token != group.token
    again = get_or_create(api_client, {"user_group_id": group.provided_id}).json()
    assert again["new_user_group"] is False
    assert again["user_group"]["token"] == new_token
    stored = UserGroup.objects.get(pk=group.pk)
    assert stored.token == new_token
    assert stored.token_digest == crypto.digest(new_token)
    assert stored.token_rotated_at is not None


def test_rotation_changes_nothing_else(api_client, group):
    before = UserGroup.objects.filter(pk=group.pk).values(
        "provided_id", "name", "properties", "workspace_id", "created_at"
    )[0]
    mapping = dict(group.mappings.values_list("schema_id", "data_source_id"))
    rotated(rotate(api_client, {"current_token": group.token}))
    after = UserGroup.objects.filter(pk=group.pk).values(*before)[0]
    assert after == before
    assert dict(group.mappings.values_list("schema_id", "data_source_id")) == mapping


def test_old_token_cannot_be_rotated_again(api_client, group):
    first = rotated(rotate(api_client, {"current_token": group.token}))
    with database_unchanged():
        not_found(rotate(api_client, {"current_token": group.token}))
    # The new token is the one that rotates now, and each rotation gives a fresh token.
    second = rotated(rotate(api_client, {"current_token": first["token"]}))
    assert len({group.token, first["token"], second["token"]}) == 3
    not_found(rotate(api_client, {"current_token": first["token"]}))


def test_old_token_stops_resolving_at_once(api_client, group):
    rotated(rotate(api_client, {"current_token": group.token}))
    assert resolve_group_token(group.token) is None


def test_rotation_touches_only_the_group_of_the_token(api_client, workspace, group):
    other = UserGroupFactory(workspace=workspace)
    other_digest = other.token_digest
    rotated(rotate(api_client, {"current_token": group.token}))
    other.refresh_from_db()
    assert other.token_digest == other_digest
    assert other.token_rotated_at is None


def test_trailing_slash_is_accepted(api_client, group):
    response = rotate(api_client, {"current_token": group.token}, path=API_URL + "/")
    assert rotated(response)["team_id"] == group.team_id


def test_unknown_fields_are_ignored(api_client, group):
    body = {"current_token": group.token, "user_group_id": "other", "token": "ugt_" + "B" * 43}
    assert rotated(rotate(api_client, body))["provided_id"] == group.provided_id


# --- No oracle --------------------------------------------------------------------------


def test_another_workspaces_token_is_answered_like_an_unknown_one(other_api_client, group):
    with database_unchanged():
        foreign = not_found(rotate(other_api_client, {"current_token": group.token}))
        unknown = not_found(rotate(other_api_client, {"current_token": crypto.new_group_token()}))
    assert foreign == unknown
    assert foreign == {
        "success": 0,
        "error": {"code": "not_found", "message": foreign["error"]["message"]},
    }
    assert foreign["error"]["message"]
    # And the group's own token still works for its workspace.
    assert resolve_group_token(group.token).team_id == group.pk


def test_not_found_headers_do_not_differ_either(other_api_client, group):
    foreign = rotate(other_api_client, {"current_token": group.token})
    unknown = rotate(other_api_client, {"current_token": crypto.new_group_token()})
    assert foreign.content == unknown.content
    # Each answer carries its own request id; nothing else may differ.
    assert foreign.headers.pop("X-Request-ID") != unknown.headers.pop("X-Request-ID")
    assert sorted(foreign.headers.items()) == sorted(unknown.headers.items())


MALFORMED_TOKENS = [
    "ugt_",
    "ugt_short",
    "ugk_" + "A" * 43,  # an API key's shape
    "UGT_" + "A" * 43,
    "ugt_" + "A" * 42,
    "ugt_" + "A" * 44,
    "ugt_" + "!" * 43,
    "ugt_" + "é" * 43,
    " ugt_" + "A" * 43,
    "ugt_" + "A" * 43 + " ",
    "ugt_" + "A" * 43 + "\n",
    "ugt_" + "A" * 21 + "=" + "A" * 21,
    "x" * 255,
]


@pytest.mark.parametrize("token", MALFORMED_TOKENS)
def test_malformed_tokens_are_404_without_a_query(
    api_client, recently_used_key, group, token, django_assert_num_queries
):
    # The one query is the API key's lookup; the token never reaches the database.
    with django_assert_num_queries(1):
        response = rotate(api_client, {"current_token": token})
    assert not_found(response)["error"]["code"] == "not_found"


def test_group_token_with_a_key_in_the_body_is_not_found(api_client, api_key, group):
    not_found(rotate(api_client, {"current_token": api_key.key}))


# --- Grace period -------------------------------------------------------------------------


def test_without_grace_nothing_of_the_old_token_is_kept(api_client, group):
    rotated(rotate(api_client, {"current_token": group.token}))
    stored = UserGroup.objects.get(pk=group.pk)
    assert stored.previous_token_digest is None
    assert stored.previous_token_valid_until is None


@override_settings(USERGROUPS={"ROTATION_GRACE_SECONDS": 300})
def test_grace_keeps_the_old_token_resolvable_but_not_rotatable(api_client, group):
    start = timezone.now()
    new_token = rotated(rotate(api_client, {"current_token": group.token}))["token"]
    stored = UserGroup.objects.get(pk=group.pk)
    assert stored.previous_token_digest == crypto.digest(group.token)
    assert start + timedelta(seconds=300) <= stored.previous_token_valid_until
    assert stored.previous_token_valid_until <= timezone.now() + timedelta(seconds=300)
    assert resolve_group_token(group.token).team_id == stored.pk
    assert resolve_group_token(new_token).team_id == stored.pk
    with database_unchanged():
        not_found(rotate(api_client, {"current_token": group.token}))
    # get-or-create shows only the new token.
    shown = get_or_create(api_client, {"user_group_id": group.provided_id}).json()
    assert shown["user_group"]["token"] == new_token


@override_settings(USERGROUPS={"ROTATION_GRACE_SECONDS": 300})
def test_grace_ends(api_client, group):
    rotated(rotate(api_client, {"current_token": group.token}))
    UserGroup.objects.filter(pk=group.pk).update(
        previous_token_valid_until=timezone.now() - timedelta(seconds=1)
    )
    assert resolve_group_token(group.token) is None


# --- Signals ------------------------------------------------------------------------------


@pytest.fixture
def received():
    """Every (signal name, group) sent while the test runs."""
    calls = []
    receivers = {}
    for name in ("group_created", "group_updated", "token_rotated", "group_deleted"):

        def receiver(sender, group, name=name, **kwargs):
            calls.append((name, group.team_id))

        receivers[name] = receiver
        getattr(signals, name).connect(receiver)
    yield calls
    for name, receiver in receivers.items():
        getattr(signals, name).disconnect(receiver)


def test_token_rotated_is_sent_once_after_commit(
    api_client, group, received, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        rotated(rotate(api_client, {"current_token": group.token}))
    assert received == []  # nothing before the commit
    for callback in callbacks:
        callback()
    assert received == [("token_rotated", group.pk)]


def test_failed_rotation_sends_nothing(
    api_client, group, received, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        not_found(rotate(api_client, {"current_token": crypto.new_group_token()}))
    assert callbacks == []
    assert received == []


def test_group_created_is_sent_once_on_creation_only(
    api_client, received, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        body = get_or_create(api_client, {"user_group_id": "acme"}).json()
    assert received == [("group_created", body["user_group"]["team_id"])]
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assert (
            get_or_create(api_client, {"user_group_id": "acme"}).json()["new_user_group"] is False
        )
    assert callbacks == []
    assert received == [("group_created", body["user_group"]["team_id"])]

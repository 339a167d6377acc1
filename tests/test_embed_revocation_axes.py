"""``POST /api/user/embed-token/revoke`` on every axis (CONTRACT section 7): a group and
its subtree, an end user in every group, one token, the whole workspace; exactly one
axis per request; the denylist of single tokens and its cleanup."""

import io
import json
from datetime import timedelta

import jwt
import pytest
from django.core.management import call_command
from django.utils import timezone

from tests.support.api import assert_error, client_for
from tests.support.embed import clock_moved, dashboard, introspect, minted, revoke
from tests.support.factories import APIKeyFactory, UserGroupFactory
from usergroups import services
from usergroups.embed import tokens
from usergroups.models import RevokedEmbedToken, Workspace

AXES = ["user_group_id", "end_user_id", "embed_token", "all"]


def works(token) -> bool:
    return dashboard(token).status_code == 200


def assert_refused(token):
    assert_error(dashboard(token), 401, "authentication_failed")


@pytest.fixture
def tree(workspace):
    """parent > child > grandchild, and an unrelated group."""
    parent = UserGroupFactory.create(workspace=workspace, provided_id="parent")
    child = UserGroupFactory.create(workspace=workspace, provided_id="child", parent=parent)
    UserGroupFactory.create(workspace=workspace, provided_id="grandchild", parent=child)
    UserGroupFactory.create(workspace=workspace, provided_id="other")
    return parent


def tokens_of(client, *group_ids, **fields):
    return {group_id: minted(client, group_id, **fields) for group_id in group_ids}


def test_the_group_axis_leaves_the_children_alone(api_client, tree):
    minted_tokens = tokens_of(api_client, "parent", "child", "grandchild", "other")
    response = revoke(api_client, {"user_group_id": "parent"})
    assert response.status_code == 200
    assert response.json()["revoked"] == "user_group"
    assert response.json()["user_group"]["provided_id"] == "parent"
    assert_refused(minted_tokens.pop("parent"))
    assert all(works(token) for token in minted_tokens.values())


def test_the_subtree_axis_revokes_the_descendants(api_client, tree):
    minted_tokens = tokens_of(api_client, "parent", "child", "grandchild", "other")
    body = {"user_group_id": "child", "subtree": True}
    assert revoke(api_client, body).json()["revoked"] == "user_group"
    assert_refused(minted_tokens["child"])
    assert_refused(minted_tokens["grandchild"])
    assert works(minted_tokens["parent"]) and works(minted_tokens["other"])
    assert works(minted(api_client, "grandchild"))  # minted afterwards


def test_the_end_user_axis_revokes_the_person_in_every_group(api_client, workspace, tree):
    ann = tokens_of(api_client, "parent", "other", end_user={"id": "ann"})
    bob = minted(api_client, "parent", end_user={"id": "bob"})
    nobody = minted(api_client, "parent")
    response = revoke(api_client, {"end_user_id": "ann"})
    assert response.status_code == 200
    assert response.json() == {"success": 1, "revoked": "end_user"}
    assert all(not works(token) for token in ann.values())
    assert works(bob) and works(nobody)
    assert works(minted(api_client, "other", end_user={"id": "ann"}))


def test_the_end_user_axis_of_an_unknown_person_is_404(api_client, other_api_client, tree):
    assert_error(revoke(api_client, {"end_user_id": "nobody"}), 404, "not_found")
    ann = minted(api_client, "parent", end_user={"id": "ann"})
    assert_error(revoke(other_api_client, {"end_user_id": "ann"}), 404, "not_found")
    assert works(ann)


def test_the_token_axis_revokes_that_token_only(api_client, workspace, tree):
    token, sibling = minted(api_client, "parent"), minted(api_client, "parent")
    assert works(token)  # seen once by this process: no exception
    response = revoke(api_client, {"embed_token": token})
    assert response.status_code == 200
    assert response.json() == {"success": 1, "revoked": "embed_token"}
    assert_refused(token)
    assert introspect(api_client, token).json() == {"success": 1, "active": False}
    assert works(sibling)
    row = RevokedEmbedToken.objects.get()
    assert row.jti == tokens.verify(token).jti and row.workspace_id == workspace.pk
    assert row.expires_at == tokens.verify(token).expires_at


@pytest.mark.parametrize(
    "token", ["", "x", "eyJ.eyJ.x", "ugt_" + "a" * 43, "revoked", "expired", "foreign"]
)
def test_the_token_axis_needs_a_live_token_of_this_workspace(
    api_client, other_api_client, tree, other_workspace, token
):
    if token == "revoked":
        token = minted(api_client, "parent")
        revoke(api_client, {"embed_token": token})
    elif token == "expired":
        with clock_moved(-3600):
            token = minted(api_client, "parent", expires_in=60)
    elif token == "foreign":
        UserGroupFactory.create(workspace=other_workspace, provided_id="theirs")
        token = minted(other_api_client, "theirs")
    before = RevokedEmbedToken.objects.count()
    response = revoke(api_client, {"embed_token": token})
    # One answer for every kind (no oracle); 404, as for a group or person not there.
    error = assert_error(response, 404, "not_found")
    assert error["message"] == "No live embed token of this workspace is this one."
    assert RevokedEmbedToken.objects.count() == before


def test_revoking_a_token_deletes_the_rows_of_expired_ones(api_client, workspace, tree):
    RevokedEmbedToken.objects.create(
        jti="gone", workspace=workspace, expires_at=timezone.now() - timedelta(seconds=1)
    )
    live = minted(api_client, "parent")
    revoke(api_client, {"embed_token": live})
    assert list(RevokedEmbedToken.objects.values_list("jti", flat=True)) == [
        tokens.verify(live).jti
    ]


def test_the_prune_command_deletes_the_rows_of_expired_tokens(api_client, workspace, tree):
    live = minted(api_client, "parent")
    revoke(api_client, {"embed_token": live})
    RevokedEmbedToken.objects.create(
        jti="gone", workspace=workspace, expires_at=timezone.now() - timedelta(seconds=1)
    )
    out = io.StringIO()
    call_command("prune_revoked_embed_tokens", stdout=out)
    assert "Deleted 1 " in out.getvalue()
    assert list(RevokedEmbedToken.objects.values_list("jti", flat=True)) == [
        tokens.verify(live).jti
    ]
    assert_refused(live)


def test_the_all_axis_revokes_the_workspace_and_nothing_else(
    api_client, other_api_client, workspace, other_workspace, tree
):
    mine = [*tokens_of(api_client, "parent", "grandchild").values()]
    mine.append(minted(api_client, "other", end_user={"id": "ann"}))
    UserGroupFactory.create(workspace=other_workspace, provided_id="theirs")
    theirs = minted(other_api_client, "theirs")
    response = revoke(api_client, {"all": True})
    assert response.json() == {"success": 1, "revoked": "all"}
    assert all(not works(token) for token in mine)
    assert works(theirs)
    assert works(minted(api_client, "parent", end_user={"id": "ann"}))
    assert Workspace.objects.get(pk=workspace.pk).embed_tokens_revoked_at is not None


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, AXES),
        ({"user_group_id": "parent", "end_user_id": "ann"}, ["user_group_id", "end_user_id"]),
        ({"all": True, "embed_token": "x"}, ["embed_token", "all"]),
        ({"all": False}, ["all"]),
        ({"all": 1}, ["all"]),
        ({"all": "true"}, ["all"]),
        ({"subtree": True}, AXES),
        ({"end_user_id": "ann", "subtree": True}, ["subtree"]),
        ({"user_group_id": "parent", "subtree": 1}, ["subtree"]),
        ({"end_user_id": ""}, ["end_user_id"]),
        ({"end_user_id": 3}, ["end_user_id"]),
        ({"embed_token": 3}, ["embed_token"]),
        ({"embed_token": "a\x00"}, ["embed_token"]),
    ],
)
def test_exactly_one_axis(api_client, workspace, tree, body, fields):
    token = minted(api_client, "parent", end_user={"id": "ann"})
    assert_error(revoke(api_client, body), 400, "invalid", fields=fields)
    assert works(token)
    assert Workspace.objects.get(pk=workspace.pk).embed_generation == 0


@pytest.mark.parametrize(
    "body", [{"user_group_id": "parent"}, {"end_user_id": "ann"}, {"all": True}]
)
def test_every_axis_needs_the_embed_scope(workspace, tree, body):
    key = APIKeyFactory.create(workspace=workspace, scope_embed=False)
    assert_error(revoke(client_for(key.key), body), 403, "permission_denied")


def test_the_admins_revocation_of_a_person_ends_their_tokens(api_client, workspace, tree):
    token = minted(api_client, "parent", end_user={"id": "ann"})
    services.end_users.revoke_tokens(workspace.pk, "ann")  # what the admin's action calls
    assert_refused(token)


# A token lives no longer than its key's right to mint it (CONTRACT 8a).


def test_a_token_names_its_key_by_no_part_of_it(api_client, api_key, tree):
    token = minted(api_client, "parent")
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims[tokens.KEY_CLAIM] == api_key.public_id
    assert api_key.prefix not in token and "ugk_" not in json.dumps(claims)
    assert not api_key.key.startswith(api_key.public_id)


def test_a_token_ends_when_its_key_expires(api_client, api_key, tree):
    api_key.expires_at = timezone.now() + timedelta(seconds=60)
    api_key.save(update_fields=["expires_at"])
    token = minted(api_client, "parent")
    assert works(token)
    with clock_moved(61):
        assert_refused(token)
    api_key.expires_at = timezone.now() - timedelta(seconds=1)
    api_key.save(update_fields=["expires_at"])
    assert_refused(token)


def test_a_token_ends_when_its_key_loses_the_embed_scope(api_client, api_key, tree):
    token = minted(api_client, "parent")
    services.keys.narrow_scopes(api_key, {"read", "write", "rotate"})
    assert_refused(token)


def test_a_token_ends_with_its_key_after_a_rotations_grace(api_client, api_key, tree):
    token = minted(api_client, "parent")
    services.keys.rotate_key(api_key, timedelta(minutes=5))
    assert works(token)  # within the grace period
    with clock_moved(5 * 60 + 1):
        assert_refused(token)

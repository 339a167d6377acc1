"""Revocation of embed tokens: ``/revoke``, rotation, deletion (and cascade), at once,
and never undone by a mint racing it."""

import time
from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.support.api import assert_error, client_for, rotate
from tests.support.concurrency import run_together
from tests.support.embed import dashboard, introspect, minted, revoke
from tests.support.factories import APIKeyFactory, UserGroupFactory
from tests.support.queries import statements
from usergroups import services, signals
from usergroups.auth.group_token import resolve_group_token
from usergroups.embed import tokens
from usergroups.models import UserGroup
from usergroups.records import GroupRecord


def works(token) -> bool:
    return dashboard(token).status_code == 200


def assert_revoked(token):
    response = dashboard(token)
    assert_error(response, 401, "authentication_failed")
    assert response["WWW-Authenticate"] == 'Embed error="authentication_failed"'


@pytest.fixture
def token(api_client, group):
    return minted(api_client, group.provided_id)


def test_revoke_answers_the_group_and_stops_its_tokens(api_client, group, token):
    response = revoke(api_client, {"user_group_id": group.provided_id})
    assert response.status_code == 200
    assert response.json() == {
        "success": 1,
        "revoked": "user_group",
        "user_group": {"team_id": group.pk, "name": group.name, "provided_id": group.provided_id},
    }
    assert_revoked(token)
    assert introspect(api_client, token).json() == {"success": 1, "active": False}


def test_revoke_leaves_the_group_token_alone(api_client, group, token):
    revoke(api_client, {"user_group_id": group.provided_id})
    assert resolve_group_token(group.token).team_id == group.pk


def test_tokens_minted_after_a_revoke_work(api_client, group, token):
    revoke(api_client, {"user_group_id": group.provided_id})
    assert works(minted(api_client, group.provided_id))


def test_revoke_stops_every_token_of_the_group_only(api_client, group, workspace):
    other = UserGroupFactory.create(workspace=workspace)
    mine = [minted(api_client, group.provided_id) for _ in range(3)]
    theirs = minted(api_client, other.provided_id)
    revoke(api_client, {"user_group_id": group.provided_id})
    for token in mine:
        assert_revoked(token)
    assert works(theirs)


def test_revoke_records_when(api_client, group):
    revoke(api_client, {"user_group_id": group.provided_id})
    group.refresh_from_db()
    assert group.embed_generation == 1 and group.embed_tokens_revoked_at is not None


def test_unknown_group_is_404(api_client, other_api_client, group, token):
    assert_error(revoke(api_client, {"user_group_id": "nobody"}), 404, "not_found")
    assert_error(revoke(other_api_client, {"user_group_id": group.provided_id}), 404, "not_found")
    assert works(token)  # another workspace revokes nothing


@pytest.mark.parametrize(
    "body", [{"user_group_id": 1}, {"user_group_id": ""}, {"user_group_id": None}]
)
def test_bad_input_is_invalid(api_client, group, token, body):
    assert_error(revoke(api_client, body), 400, "invalid", fields=["user_group_id"])
    assert works(token)


def test_the_embed_scope_is_needed(workspace, group, token):
    key = APIKeyFactory.create(workspace=workspace)
    key.set_scopes({"read", "write", "rotate"})
    key.save()
    response = revoke(client_for(key.key), {"user_group_id": group.provided_id})
    assert_error(response, 403, "permission_denied")
    assert works(token)


def test_rotating_the_group_token_revokes(api_client, group, token):
    assert rotate(api_client, {"current_token": group.token}).status_code == 200
    assert_revoked(token)
    assert works(minted(api_client, group.provided_id))


def test_rotating_in_the_admin_door_revokes(api_client, group, token):
    assert services.groups.rotate_group_token(group) is not None
    assert_revoked(token)


def test_a_rotation_with_grace_revokes_at_once(api_client, group, token, settings):
    settings.USERGROUPS = {"ROTATION_GRACE_SECONDS": 3600}
    rotate(api_client, {"current_token": group.token})
    assert resolve_group_token(group.token) is not None  # the old group token, in grace
    assert_revoked(token)


def test_deleting_the_group_revokes(api_client, group, token):
    services.groups.delete_group(group.workspace_id, provided_id=group.provided_id)
    assert_revoked(token)


def test_a_cascading_delete_revokes_the_descendants(api_client, workspace):
    root = UserGroupFactory.create(workspace=workspace)
    child = UserGroupFactory.create(workspace=workspace, parent=root)
    grandchild = UserGroupFactory.create(workspace=workspace, parent=child)
    issued = [minted(api_client, g.provided_id) for g in (root, child, grandchild)]
    services.groups.delete_group(workspace.pk, provided_id=root.provided_id, cascade=True)
    for token in issued:
        assert_revoked(token)


def test_a_recreated_group_does_not_revive_old_tokens(api_client, group, token):
    """A new group under the same user_group_id is another row: another team_id."""
    services.groups.delete_group(group.workspace_id, provided_id=group.provided_id)
    UserGroupFactory.create(workspace=group.workspace, provided_id=group.provided_id)
    assert_revoked(token)


@pytest.mark.parametrize("door", ["team_id", "model", "record"])
def test_the_service_takes_a_team_id_a_model_or_a_record(group, token, door):
    record = services.groups.find_group(group.workspace_id, group.provided_id)
    given = {"team_id": group.pk, "model": group, "record": record}[door]
    revoked = services.embed.revoke_embed_tokens(given)
    assert isinstance(revoked, GroupRecord) and revoked.embed_generation == 1
    assert_revoked(token)


def test_the_service_answers_none_for_a_gone_group(db):
    assert services.embed.revoke_embed_tokens(123456) is None


def test_the_signal_is_sent_after_commit_with_the_record(group, django_capture_on_commit_callbacks):
    received = []

    def receiver(sender, group, **kwargs):
        received.append((sender, group))

    signals.embed_tokens_revoked.connect(receiver)
    try:
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            services.embed.revoke_embed_tokens(group.pk)
        assert received == []  # not before the commit
        for callback in callbacks:
            callback()
    finally:
        signals.embed_tokens_revoked.disconnect(receiver)
    assert len(received) == 1
    sender, record = received[0]
    assert sender is UserGroup and isinstance(record, GroupRecord)
    assert record.team_id == group.pk and record.embed_generation == 1


def test_revoke_costs_a_bounded_number_of_queries(api_client, recently_used_key, group):
    with CaptureQueriesContext(connection) as queries:
        revoke(api_client, {"user_group_id": group.provided_id})
    updates = statements(queries, ("UPDATE",))
    assert len(updates) == 1 and "embed_generation" in updates[0]


# --- A mint racing a revoke -------------------------------------------------------------


def test_a_revoke_between_the_mints_read_and_its_signature_wins(group):
    """The mint read the old generation; the revoke commits before the token is signed:
    the token is born revoked."""
    sign = tokens.sign

    def revoke_then_sign(**claims):
        services.embed.revoke_embed_tokens(group.pk)
        return sign(**claims)

    with mock.patch.object(tokens, "sign", revoke_then_sign):
        late = services.embed.mint_embed_token(group.workspace_id, group.provided_id)
    assert_revoked(late.token)


def test_a_revoke_before_the_mints_read_lets_the_token_work(group):
    services.embed.revoke_embed_tokens(group.pk)
    fresh = services.embed.mint_embed_token(group.workspace_id, group.provided_id)
    assert works(fresh.token)


@pytest.mark.django_db(transaction=True)
def test_concurrent_mints_and_revokes(workspace):
    """Threads mint and revoke at once, in rounds. A token whose mint had finished before
    a revoke began never works after it; a token of the final generation works."""
    group = UserGroupFactory.create(workspace=workspace)
    rounds, threads = 4, 6
    minted_tokens: list[tuple[float, str]] = []
    revoke_starts: list[float] = []

    def call(index):
        if index % 2:
            revoke_starts.append(time.monotonic())
            services.embed.revoke_embed_tokens(group.pk)
        else:
            token = services.embed.mint_embed_token(workspace.pk, group.provided_id).token
            minted_tokens.append((time.monotonic(), token))

    for _round in range(rounds):
        run_together(threads, call)
    last_revoke = max(revoke_starts)
    final = UserGroup.objects.get(pk=group.pk).embed_generation
    assert final == rounds * threads // 2
    for finished, token in minted_tokens:
        generation = tokens.verify(token).generation
        if finished < last_revoke:
            assert_revoked(token)
        assert works(token) == (generation == final)

"""Signals reach receivers after commit, whichever way a change was made: API, admin, code."""

from datetime import timedelta

import pytest

from tests.support.admin import admin_url, group_form
from tests.support.api import get_or_create, rotate
from tests.support.factories import APIKeyFactory
from usergroups import services
from usergroups.models import APIKey
from usergroups.signals import (
    api_key_rotated,
    group_created,
    group_deleted,
    group_updated,
    token_rotated,
)

SIGNALS = {
    "created": group_created,
    "updated": group_updated,
    "rotated": token_rotated,
    "deleted": group_deleted,
}


@pytest.fixture
def received():
    """``(name, team_id)`` of every signal sent, in order."""
    events = []
    receivers = {}
    for name, signal in SIGNALS.items():

        def receiver(sender, group, name=name, team_id=None, **kwargs):
            assert "token" not in kwargs  # no signal carries a token
            events.append((name, team_id or group.team_id))

        receivers[name] = receiver
        signal.connect(receiver)
    yield events
    for name, signal in SIGNALS.items():
        signal.disconnect(receivers[name])


def test_api_sends_created_and_rotated_after_commit(
    api_client, received, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        team_id = get_or_create(api_client, {"user_group_id": "acme"}).json()["user_group"][
            "team_id"
        ]
        assert received == []  # nothing before the commit
    for callback in callbacks:
        callback()
    token = get_or_create(api_client, {"user_group_id": "acme"}).json()["user_group"]["token"]
    with django_capture_on_commit_callbacks(execute=True):
        rotate(api_client, {"current_token": token})
    assert received == [("created", team_id), ("rotated", team_id)]


def test_reads_send_nothing(api_client, group, received, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        get_or_create(api_client, {"user_group_id": group.provided_id})
    assert callbacks == [] and received == []


def test_admin_change_rotation_and_delete(
    admin_client, group, received, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            admin_url("usergroup", "change", group.pk),
            group_form(provided_id=group.provided_id, name="Renamed"),
        )
        assert response.status_code == 302
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(admin_url("usergroup", "delete", group.pk), {"post": "yes"})
    assert received == [("updated", group.pk), ("deleted", group.pk)]


def test_code_paths_send_the_same(group, received, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        services.groups.rotate_group_token(group)
        services.groups.update_group(group.workspace_id, group.provided_id, {"name": "x"})
        services.groups.delete_group(group.workspace_id, provided_id=group.provided_id)
    assert received == [("rotated", group.pk), ("updated", group.pk), ("deleted", group.pk)]


def test_api_key_rotated_is_sent_after_commit_without_a_key(db, django_capture_on_commit_callbacks):
    """Sent once the rotation commits, with both rows, whose prefixes name the keys; no
    argument holds a key."""
    old = APIKeyFactory(scope_rotate=False)
    events = []

    def receiver(sender, **kwargs):
        events.append((sender, kwargs))

    api_key_rotated.connect(receiver)
    try:
        with django_capture_on_commit_callbacks() as callbacks:
            new_row, new_key = services.keys.rotate_key(old, timedelta(hours=2))
            assert events == []  # nothing before the commit
        for callback in callbacks:
            callback()
    finally:
        api_key_rotated.disconnect(receiver)
    [(sender, kwargs)] = events
    assert sender is APIKey
    assert set(kwargs) == {"signal", "old_key", "new_key", "old_key_valid_until"}
    assert kwargs["old_key"].pk == old.pk and kwargs["new_key"].pk == new_row.pk
    assert kwargs["new_key"].scopes == old.scopes == {"read", "write", "embed"}
    assert kwargs["old_key_valid_until"] == APIKey.objects.get(pk=old.pk).expires_at
    for value in kwargs.values():
        assert old.key not in repr(value) and new_key not in repr(value)

"""Revoking a group's embed tokens in the admin: the change page's button, the bulk
action, and when they were last revoked (read-only on the change page)."""

from datetime import UTC, datetime
from unittest import mock

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.messages import get_messages
from django.test import Client

from tests.support.admin import admin_url, staff_client
from tests.support.factories import UserGroupFactory
from usergroups import services, signals
from usergroups.models import UserGroup

pytestmark = pytest.mark.django_db

REVOKED_AT = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)


def embed_token(group: UserGroup) -> str:
    return services.embed.mint_embed_token(group.workspace_id, group.provided_id).token


def verifies(group: UserGroup, token: str) -> bool:
    """Whether the embed side would take ``token`` of ``group`` now."""
    return services.embed.introspect(group.workspace_id, token) is not None


def state(group: UserGroup) -> tuple:
    group.refresh_from_db()
    return group.embed_generation, group.embed_tokens_revoked_at, group.token_digest


@pytest.fixture
def received():
    """Team ids of the groups ``embed_tokens_revoked`` was sent for."""
    seen: list[int] = []

    def receiver(sender, group, **kwargs):
        seen.append(group.team_id)

    signals.embed_tokens_revoked.connect(receiver, weak=False, dispatch_uid="admin-test")
    yield seen
    signals.embed_tokens_revoked.disconnect(dispatch_uid="admin-test")


# The change page ---------------------------------------------------------------------------


def test_the_change_page_offers_the_button_and_says_never(admin_client, group):
    html = admin_client.get(admin_url("usergroup", "change", group.pk)).content.decode()
    assert admin_url("usergroup", "revoke_embed_tokens", group.pk) in html
    assert "Revoke embed tokens" in html
    assert "Embed tokens last revoked" in html
    field = html[html.index("field-embed_tokens_revoked") :]
    assert "Never" in field[: field.index("</div>\n")]


def test_the_change_page_shows_when_they_were_last_revoked(admin_client, group):
    UserGroup.objects.filter(pk=group.pk).update(embed_tokens_revoked_at=REVOKED_AT)
    html = admin_client.get(admin_url("usergroup", "change", group.pk)).content.decode()
    assert f'datetime="{REVOKED_AT.isoformat()}"' in html
    # Read-only: no input for it, and a POST of the form cannot set it.
    assert 'name="embed_tokens_revoked_at"' not in html


def test_revocation_asks_first_then_refuses_every_token_minted_before(
    admin_client, group, received, django_capture_on_commit_callbacks
):
    before = [embed_token(group), embed_token(group)]
    generation, _, digest = state(group)
    url = admin_url("usergroup", "revoke_embed_tokens", group.pk)

    page = admin_client.get(url)
    html = page.content.decode()
    assert page.status_code == 200
    assert 'method="post"' in html and "csrfmiddlewaretoken" in html
    assert "Revoke every embed token of this user group?" in html
    assert all(verifies(group, token) for token in before)  # GET changes nothing

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(url)
    assert response.status_code == 302
    assert response["Location"] == admin_url("usergroup", "change", group.pk)
    assert not any(verifies(group, token) for token in before)
    assert verifies(group, embed_token(group))  # minted afterwards: works
    new_generation, revoked_at, new_digest = state(group)
    assert new_generation > generation and revoked_at is not None
    assert new_digest == digest  # the group token is left as it is
    assert received == [group.pk]

    messages = [str(m) for m in get_messages(response.wsgi_request)]
    assert messages == [f"The embed tokens of “{group}” were revoked."]
    entry = LogEntry.objects.get(object_id=str(group.pk))
    assert (entry.action_flag, entry.change_message) == (CHANGE, "Revoked the embed tokens.")
    change_page = admin_client.get(admin_url("usergroup", "change", group.pk)).content.decode()
    assert f'datetime="{revoked_at.isoformat()}"' in change_page


def test_revocation_is_csrf_protected(group, admin_user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    token = embed_token(group)
    assert client.post(admin_url("usergroup", "revoke_embed_tokens", group.pk)).status_code == 403
    assert verifies(group, token)


def test_revocation_needs_the_change_permission(group):
    viewer = staff_client("view_usergroup", "view_token")
    token = embed_token(group)
    page = viewer.get(admin_url("usergroup", "change", group.pk)).content.decode()
    assert "Revoke embed tokens" not in page
    url = admin_url("usergroup", "revoke_embed_tokens", group.pk)
    assert viewer.get(url).status_code == 403
    assert viewer.post(url).status_code == 403
    assert verifies(group, token)
    assert not LogEntry.objects.exists()


def test_revocation_of_a_group_deleted_meanwhile_says_so(admin_client, group):
    with mock.patch.object(services.embed, "revoke_embed_tokens", return_value=None):
        response = admin_client.post(
            admin_url("usergroup", "revoke_embed_tokens", group.pk), follow=True
        )
    assert "doesn’t exist. Perhaps it was deleted?" in response.content.decode()
    assert not LogEntry.objects.exists()


def test_revocation_of_an_unknown_group_redirects(admin_client):
    response = admin_client.get(admin_url("usergroup", "revoke_embed_tokens", 987654))
    assert response.status_code == 302
    page = admin_client.get(response.url).content.decode()
    assert "User group with ID “987654” doesn’t exist. Perhaps it was deleted?" in page


# The bulk action -----------------------------------------------------------------------------


def test_bulk_revocation_asks_first_then_revokes_each(
    admin_client, workspace, received, django_capture_on_commit_callbacks
):
    groups = UserGroupFactory.create_batch(3, workspace=workspace)
    untouched = UserGroupFactory(workspace=workspace)
    tokens = {group.pk: embed_token(group) for group in [*groups, untouched]}
    url = admin_url("usergroup", "changelist")
    selection = {"action": "revoke_embed_tokens", "_selected_action": [g.pk for g in groups]}

    page = admin_client.post(url, selection)
    html = page.content.decode()
    assert page.status_code == 200
    assert "Revoke every embed token of these user groups?" in html
    assert all(str(group) in html for group in groups)
    assert all(verifies(group, tokens[group.pk]) for group in [*groups, untouched])

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(url, {**selection, "post": "yes"}, follow=True)
    assert "Revoked the embed tokens of 3 user groups." in response.content.decode()
    assert not any(verifies(group, tokens[group.pk]) for group in groups)
    assert verifies(untouched, tokens[untouched.pk])
    assert sorted(received) == sorted(group.pk for group in groups)
    assert LogEntry.objects.filter(change_message="Revoked the embed tokens.").count() == 3


def test_bulk_revocation_needs_the_change_permission(group):
    viewer = staff_client("view_usergroup")
    token = embed_token(group)
    url = admin_url("usergroup", "changelist")
    assert "revoke_embed_tokens" not in viewer.get(url).content.decode()
    viewer.post(
        url, {"action": "revoke_embed_tokens", "_selected_action": [group.pk], "post": "yes"}
    )
    assert verifies(group, token)

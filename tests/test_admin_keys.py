"""The API key admin: made on the server, shown once, known by prefix, revoked for good."""

import re
from datetime import timedelta

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.contrib.messages import get_messages
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from tests.support.admin import admin_url, create_key, shown_once, staff_client
from tests.support.api import API_URL
from tests.support.factories import APIKeyFactory, WorkspaceFactory
from usergroups import crypto
from usergroups.models import APIKey, AuditEvent
from usergroups.scopes import SCOPES
from usergroups.services import keys

pytestmark = pytest.mark.django_db

KEY_SHAPE = re.compile(r"ugk_[A-Za-z0-9_-]{43}")


def api_status(key: str) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client.get(API_URL, {"user_group_id": "probe"}).status_code


# Creation ------------------------------------------------------------------------------


def test_add_page_asks_only_for_workspace_name_and_expiry(admin_client, workspace):
    html = admin_client.get(admin_url("apikey", "add")).content.decode()
    assert 'name="workspace"' in html and 'name="name"' in html and 'name="expires_at_0"' in html
    assert 'name="prefix"' not in html and 'name="digest"' not in html
    assert 'value="Create API key"' in html
    assert "_addanother" not in html and "_continue" not in html
    assert "shown to you once" in html


def test_the_add_redirects_to_a_page_that_shows_the_key_once(admin_client, workspace):
    """Issue 27, item 6: the key's page was the answer to the add form's POST, so a
    reload sent the form again and made a second key. Now the POST redirects, and the
    page shows the key on its first GET only."""
    posted = create_key(admin_client, workspace, follow=False, name="Production backend")
    row = APIKey.objects.get()
    assert posted["Location"] == admin_url("apikey", "new_secret", row.pk)
    (key,) = shown_once(admin_client, posted, KEY_SHAPE)
    assert crypto.digest(key) == row.digest and api_status(key) == 200
    assert APIKey.objects.count() == 1
    assert AuditEvent.objects.filter(action="api_key.created").count() == 1


def test_the_key_page_without_a_key_kept_shows_none(admin_client, api_key):
    """Another session, or a session value changed by hand, opens nothing: the page
    sends to the key's own page."""
    session = admin_client.session
    session[f"usergroups.secret_page:apikey:{api_key.pk}"] = "not-sealed-by-the-server"
    session.save()
    response = admin_client.get(admin_url("apikey", "new_secret", api_key.pk))
    assert response.status_code == 302
    assert response["Location"] == admin_url("apikey", "change", api_key.pk)
    assert "usergroups.secret_page:apikey:" not in str(dict(admin_client.session))


def test_new_key_is_shown_once_on_a_page_of_its_own(admin_client, workspace):
    response = create_key(admin_client, workspace, name="Production backend")
    assert response.status_code == 200 and len(response.redirect_chain) == 1
    html = response.content.decode()
    keys = KEY_SHAPE.findall(html)
    assert len(keys) == 1
    key = keys[0]
    assert "This is the only time the key is shown." in html
    assert "data-ug-copy" in html
    row = APIKey.objects.get()
    assert (row.name, row.workspace, row.prefix) == ("Production backend", workspace, key[:12])
    # Not in a message, a cookie or the session: nothing keeps it after this page.
    assert list(get_messages(response.wsgi_request)) == []
    assert all(key not in morsel.value for morsel in response.cookies.values())
    assert key not in str(dict(admin_client.session))
    assert "no-store" in response["Cache-Control"]
    entry = LogEntry.objects.get()
    assert entry.action_flag == ADDITION and key not in entry.object_repr
    # It works against the API.
    assert api_status(key) == 200
    # Afterwards only the prefix is ever shown.
    for url in (
        admin_url("apikey", "changelist"),
        admin_url("apikey", "change", row.pk),
        admin_url("apikey", "history", row.pk),
    ):
        later = admin_client.get(url).content.decode()
        assert key not in later and row.digest not in later
        assert f"{row.prefix}…" in later


def test_expiry_must_be_in_the_future(admin_client, workspace):
    yesterday = timezone.now() - timedelta(days=1)
    response = create_key(
        admin_client,
        workspace,
        expires_at_0=yesterday.date().isoformat(),
        expires_at_1="12:00:00",
    )
    assert response.context["adminform"].form.errors["expires_at"] == ["Must be in the future."]
    assert not APIKey.objects.exists()


def test_name_follows_the_shared_text_rules(admin_client, workspace):
    response = create_key(admin_client, workspace, name="bad\x00name")
    assert response.context["adminform"].form.errors["name"] == ["Must not contain NUL characters."]


def test_key_with_expiry_expires(admin_client, workspace):
    tomorrow = timezone.localtime() + timedelta(days=1)
    response = create_key(
        admin_client,
        workspace,
        expires_at_0=tomorrow.date().isoformat(),
        expires_at_1=tomorrow.strftime("%H:%M:%S"),
    )
    key = KEY_SHAPE.findall(response.content.decode())[0]
    assert api_status(key) == 200
    APIKey.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert api_status(key) == 401


def test_adding_needs_the_add_permission(workspace):
    viewer = staff_client("view_apikey")
    assert viewer.get(admin_url("apikey", "add")).status_code == 403
    assert create_key(viewer, workspace).status_code == 403
    assert not APIKey.objects.exists()


# The list ------------------------------------------------------------------------------


def test_list_shows_prefix_name_workspace_dates_and_state(admin_client, workspace):
    now = timezone.now()
    active = APIKeyFactory(workspace=workspace, name="Live")
    used = APIKeyFactory(workspace=workspace, name="Used", last_used_at=now)
    expired = APIKeyFactory(workspace=workspace, name="Old", expires_at=now - timedelta(days=1))
    revoked = APIKeyFactory(workspace=workspace, name="Gone", revoked_at=now)
    response = admin_client.get(admin_url("apikey", "changelist"))
    html = response.content.decode()
    for header in ("Prefix", "Name", "Workspace", "Created", "Last used", "Expires", "State"):
        assert f">{header}</a>" in html or f">{header}</span>" in html
    for row in (active, used, expired, revoked):
        assert f"{row.prefix}…" in html and row.key not in html
    assert '<span class="ug-state ug-state-active">Active</span>' in html
    assert '<span class="ug-state ug-state-expired">Expired</span>' in html
    assert '<span class="ug-state ug-state-revoked">Revoked</span>' in html
    assert '<td class="field-last_used">Never</td>' in html
    assert '<td class="field-expires">Never</td>' in html
    url = admin_url("apikey", "changelist")

    def listed(state):
        return set(admin_client.get(url, {"state": state}).context["cl"].result_list)

    assert listed("active") == {active, used}
    assert listed("expired") == {expired}
    assert listed("revoked") == {revoked}


def test_search_by_name_prefix_or_the_whole_key(admin_client, workspace):
    wanted = APIKeyFactory(workspace=workspace, name="Billing")
    APIKeyFactory(workspace=workspace, name="Other")
    url = admin_url("apikey", "changelist")
    for term in ("billing", wanted.prefix, wanted.key):
        assert list(admin_client.get(url, {"q": term}).context["cl"].result_list) == [wanted]


def test_a_whole_key_is_searched_by_its_digest(admin_client, workspace):
    """A pasted key finds its row only when all of it is right, as the API would."""
    wanted = APIKeyFactory(workspace=workspace, name="Billing")
    forged = wanted.prefix + crypto.new_api_key()[crypto.KEY_LOOKUP_LENGTH :]
    url = admin_url("apikey", "changelist")
    assert list(admin_client.get(url, {"q": wanted.key}).context["cl"].result_list) == [wanted]
    assert list(admin_client.get(url, {"q": forged}).context["cl"].result_list) == []


def test_list_of_many_keys_makes_a_fixed_number_of_queries(
    admin_client, django_assert_max_num_queries
):
    for workspace in WorkspaceFactory.create_batch(5):
        APIKeyFactory.create_batch(10, workspace=workspace)
    with django_assert_max_num_queries(8):
        response = admin_client.get(admin_url("apikey", "changelist"))
    assert len(response.context["cl"].result_list) == 50


# Revocation ----------------------------------------------------------------------------


def test_revoke_button_asks_first_then_revokes_for_good(admin_client, api_key):
    assert api_status(api_key.key) == 200
    change_url = admin_url("apikey", "change", api_key.pk)
    assert "Revoke" in admin_client.get(change_url).content.decode()
    url = admin_url("apikey", "revoke", api_key.pk)
    page = admin_client.get(url).content.decode()
    assert "Revoke this API key?" in page and "cannot be undone" in page
    assert 'method="post"' in page and "csrfmiddlewaretoken" in page
    assert not APIKey.objects.get().is_revoked

    response = admin_client.post(url)
    assert response.status_code == 302 and response["Location"] == change_url
    assert APIKey.objects.get().is_revoked
    assert api_status(api_key.key) == 401
    messages = [str(m) for m in get_messages(response.wsgi_request)]
    assert messages == [f"The API key {api_key.prefix}… was revoked. Requests with it are refused."]
    entry = LogEntry.objects.get()
    assert (entry.action_flag, entry.change_message) == (CHANGE, "Revoked the key.")


def test_revoked_key_is_read_only_and_stays_revoked(admin_client, api_key):
    keys.revoke_key(api_key)
    revoked_at = APIKey.objects.get().revoked_at
    change_url = admin_url("apikey", "change", api_key.pk)
    html = admin_client.get(change_url).content.decode()
    assert 'name="_save"' not in html and 'name="name"' not in html
    assert "/revoke/" not in html  # no Revoke button either
    response = admin_client.post(change_url, {"name": "renamed", "revoked_at": ""})
    assert response.status_code == 403
    row = APIKey.objects.get()
    assert (row.name, row.revoked_at) == (api_key.name, revoked_at)
    # Revoking again keeps the first time and says so.
    response = admin_client.post(admin_url("apikey", "revoke", api_key.pk), follow=True)
    assert "is already revoked" in response.content.decode()
    assert APIKey.objects.get().revoked_at == revoked_at
    assert api_status(api_key.key) == 401


def test_editing_an_active_key_never_writes_back_a_revocation(admin_client, api_key):
    change_url = admin_url("apikey", "change", api_key.pk)
    data = {
        "name": "Renamed",
        "expires_at_0": "",
        "expires_at_1": "",
        "revoked_at": "",
        "scopes": list(SCOPES),
    }
    from usergroups.admin.forms import APIKeyChangeForm

    original_clean = APIKeyChangeForm.clean

    def clean_while_someone_revokes(form):
        keys.revoke_key(APIKey.objects.get(pk=api_key.pk))
        return original_clean(form)

    APIKeyChangeForm.clean = clean_while_someone_revokes
    try:
        response = admin_client.post(change_url, data)
    finally:
        APIKeyChangeForm.clean = original_clean
    assert response.status_code == 302
    row = APIKey.objects.get()
    assert row.name == "Renamed" and row.is_revoked


def test_revoking_needs_the_change_permission_and_csrf(api_key, admin_user):
    viewer = staff_client("view_apikey")
    url = admin_url("apikey", "revoke", api_key.pk)
    assert "/revoke/" not in viewer.get(admin_url("apikey", "change", api_key.pk)).content.decode()
    assert viewer.get(url).status_code == 403
    assert viewer.post(url).status_code == 403
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(admin_user)
    assert strict.post(url).status_code == 403
    assert not APIKey.objects.get().is_revoked
    assert api_status(api_key.key) == 200


def test_bulk_revoke_asks_first_and_skips_revoked_keys(admin_client, workspace):
    keys = APIKeyFactory.create_batch(2, workspace=workspace)
    already = APIKeyFactory(workspace=workspace, revoked_at=timezone.now() - timedelta(days=1))
    spared = APIKeyFactory(workspace=workspace)
    url = admin_url("apikey", "changelist")
    selection = {"action": "revoke_keys", "_selected_action": [k.pk for k in [*keys, already]]}
    page = admin_client.post(url, selection).content.decode()
    assert "Revoke these API keys?" in page
    assert "1 selected key already revoked stays as it is." in page
    assert all(api_status(k.key) == 200 for k in keys)

    response = admin_client.post(url, {**selection, "post": "yes"}, follow=True)
    assert "Revoked 2 API keys. Requests with them are refused from now on." in (
        response.content.decode()
    )
    assert all(api_status(k.key) == 401 for k in keys)
    assert api_status(spared.key) == 200
    assert LogEntry.objects.filter(change_message="Revoked the key.").count() == 2
    assert APIKey.objects.get(pk=already.pk).revoked_at == already.revoked_at


def test_bulk_revoke_of_revoked_keys_only_says_so(admin_client, workspace):
    key = APIKeyFactory(workspace=workspace, revoked_at=timezone.now())
    response = admin_client.post(
        admin_url("apikey", "changelist"),
        {"action": "revoke_keys", "_selected_action": [key.pk]},
        follow=True,
    )
    assert "The selected API keys are already revoked." in response.content.decode()

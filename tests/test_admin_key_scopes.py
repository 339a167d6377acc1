"""API key scopes and rotation in the admin: chosen on creation, shown and filtered in the
list, narrowed (never widened) on the change page, and the "rotate" action that shows
each new key once and keeps the old one working for the grace period chosen."""

import re
from datetime import timedelta

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.models import LogEntry
from django.contrib.messages import get_messages
from django.utils import timezone

from tests.support.admin import admin_url, create_key, shown_once, staff_client
from tests.support.api import assert_error, client_for, get_or_create
from tests.support.factories import APIKeyFactory
from usergroups import crypto, services
from usergroups.admin.forms import APIKeyChangeForm
from usergroups.models import APIKey, AuditEvent
from usergroups.scopes import SCOPES

pytestmark = pytest.mark.django_db

KEY_SHAPE = re.compile(r"ugk_[A-Za-z0-9_-]{43}")
CHANGELIST = "changelist"


def scoped_key(workspace, *held):
    return APIKeyFactory(workspace=workspace, **{f"scope_{s}": s in held for s in SCOPES})


def change_data(api_key, scopes):
    return {
        "name": api_key.name,
        "expires_at_0": "",
        "expires_at_1": "",
        "scopes": list(scopes),
    }


def api_status(key: str, user_group_id: str = "probe") -> int:
    return get_or_create(client_for(key), {"user_group_id": user_group_id}).status_code


# Creation ------------------------------------------------------------------------------


def test_the_add_page_offers_every_scope_ticked(admin_client):
    html = admin_client.get(admin_url("apikey", "add")).content.decode()
    for scope in SCOPES:
        assert re.search(rf'<input type="checkbox" name="scopes" value="{scope}"[^>]*checked', html)


def test_a_key_created_with_fewer_scopes_holds_only_them(admin_client, workspace):
    response = create_key(admin_client, workspace, scopes=["read", "embed"])
    html = response.content.decode()
    (key,) = KEY_SHAPE.findall(html)
    assert '<label>Scopes:</label><div class="readonly">read, embed</div>' in html
    assert APIKey.objects.get().scopes == {"read", "embed"}
    assert api_status(key) == 403  # "probe" would be created: write is needed


def test_a_key_needs_at_least_one_scope(admin_client, workspace):
    response = create_key(admin_client, workspace, scopes=[])
    assert response.status_code == 200
    assert "Choose at least one scope." in response.content.decode()
    assert not APIKey.objects.exists()


def test_an_unknown_scope_is_refused(admin_client, workspace):
    response = create_key(admin_client, workspace, scopes=["read", "admin"])
    assert "Select a valid choice" in response.content.decode()
    assert not APIKey.objects.exists()


# The list ------------------------------------------------------------------------------


def test_the_list_shows_and_filters_the_scopes(admin_client, workspace):
    everything = scoped_key(workspace, *SCOPES)
    reader = scoped_key(workspace, "read")
    embedder = scoped_key(workspace, "read", "embed")
    url = admin_url("apikey", CHANGELIST)
    html = admin_client.get(url).content.decode()
    assert ">Scopes</a>" in html or ">Scopes</span>" in html
    assert '<td class="field-scope_names">read, write, rotate, embed</td>' in html
    assert '<td class="field-scope_names">read</td>' in html
    assert '<td class="field-scope_names">read, embed</td>' in html

    def listed(**params):
        response = admin_client.get(url, params)
        assert response.status_code == 200
        return set(response.context["cl"].result_list)

    assert listed(has_scope="write") == {everything}
    assert listed(has_scope="embed") == {everything, embedder}
    assert listed(lacks_scope="write") == {reader, embedder}
    assert listed(lacks_scope="read") == set()
    assert listed(has_scope="read", lacks_scope="embed") == {reader}
    assert "has scope" in html and "lacks scope" in html


def test_the_scope_columns_are_filtered_only_through_the_offered_filters(admin_client, api_key):
    response = admin_client.get(admin_url("apikey", CHANGELIST), {"scope_write__exact": "1"})
    assert response.status_code == 400


# The change page: narrowing only ----------------------------------------------------------


def test_the_change_page_offers_only_the_scopes_the_key_holds(admin_client, workspace):
    key = scoped_key(workspace, "read", "rotate")
    html = admin_client.get(admin_url("apikey", "change", key.pk)).content.decode()
    assert 'name="scopes" value="read"' in html and 'name="scopes" value="rotate"' in html
    assert 'name="scopes" value="write"' not in html
    assert 'name="scopes" value="embed"' not in html
    assert "never gets a scope it lacks" in html


def test_narrowing_takes_effect_on_the_next_request(admin_client, api_key, group):
    assert api_status(api_key.key, "new-one") == 200
    response = admin_client.post(
        admin_url("apikey", "change", api_key.pk), change_data(api_key, ["read", "rotate"])
    )
    assert response.status_code == 302
    assert APIKey.objects.get().scopes == {"read", "rotate"}
    error = assert_error(
        get_or_create(client_for(api_key.key), {"user_group_id": "another"}),
        403,
        "permission_denied",
    )
    assert "'write'" in error["message"]
    assert api_status(api_key.key, group.provided_id) == 200  # read kept
    assert LogEntry.objects.filter(object_id=str(api_key.pk)).exists()


def test_widening_is_refused(admin_client, workspace):
    key = scoped_key(workspace, "read")
    response = admin_client.post(
        admin_url("apikey", "change", key.pk), change_data(key, ["read", "write"])
    )
    assert response.status_code == 200
    assert "Select a valid choice. write is not one of the available choices." in (
        response.content.decode()
    )
    assert APIKey.objects.get().scopes == {"read"}


def test_a_scope_taken_meanwhile_is_never_written_back(admin_client, workspace, monkeypatch):
    """Another admin takes write while this page, which still offers it ticked, is being
    saved: the key stays without write (like a revocation, never undone by an edit)."""
    key = scoped_key(workspace, "read", "write")
    original_clean = APIKeyChangeForm.clean

    def clean_while_someone_narrows(form):
        APIKey.objects.filter(pk=key.pk).update(scope_write=False)
        return original_clean(form)

    monkeypatch.setattr(APIKeyChangeForm, "clean", clean_while_someone_narrows)
    data = {**change_data(key, ["read", "write"]), "name": "Renamed"}
    response = admin_client.post(admin_url("apikey", "change", key.pk), data)
    assert response.status_code == 302
    stored = APIKey.objects.get()
    assert stored.name == "Renamed" and stored.scopes == {"read"}


def test_narrow_scopes_takes_and_never_gives(workspace):
    key = scoped_key(workspace, "read", "rotate")
    services.keys.narrow_scopes(key, {"read", "write", "embed"})
    assert APIKey.objects.get().scopes == {"read"} == key.scopes


def test_staff_who_may_only_view_see_the_scopes_read_only(workspace):
    key = scoped_key(workspace, "read", "embed")
    html = staff_client("view_apikey").get(admin_url("apikey", "change", key.pk)).content.decode()
    assert "read, embed" in html and 'name="scopes"' not in html


# The rotate action ---------------------------------------------------------------------


@pytest.fixture
def move_clock(monkeypatch):
    real_now = timezone.now

    def move(delta):
        monkeypatch.setattr(timezone, "now", lambda: real_now() + delta)

    return move


def rotate(client, *api_keys, follow=False, **data):
    return client.post(
        admin_url("apikey", CHANGELIST),
        {"action": "rotate_keys", ACTION_CHECKBOX_NAME: [k.pk for k in api_keys], **data},
        follow=follow,
    )


def test_the_action_asks_first_with_a_grace_of_24_hours(admin_client, api_key):
    response = rotate(admin_client, api_key)
    html = response.content.decode()
    assert "Replace these API keys by new ones?" in html
    assert re.search(r'<input type="number" name="grace_hours" value="24"', html)
    assert APIKey.objects.count() == 1 and not KEY_SHAPE.search(html)


def test_the_action_shows_each_new_key_once_and_keeps_the_old_for_the_grace(
    admin_client, workspace, move_clock
):
    old = scoped_key(workspace, "read", "write")
    response = rotate(admin_client, old, post="yes", grace_hours="2", follow=True)
    assert response.status_code == 200
    html = response.content.decode()
    (new_key,) = KEY_SHAPE.findall(html)
    assert "This is the only time the new key is shown." in html
    assert "keeps working for 2 hours" in html
    assert "no-store" in response["Cache-Control"]
    new = APIKey.objects.exclude(pk=old.pk).get()
    assert (new.workspace, new.name, new.scopes) == (old.workspace, old.name, {"read", "write"})
    assert new_key.startswith(new.prefix)
    # Not kept anywhere once shown: no message, cookie, session or history entry holds it.
    assert list(get_messages(response.wsgi_request)) == []
    assert new_key not in str(dict(admin_client.session))
    assert all(new_key not in entry.change_message for entry in LogEntry.objects.all())
    assert new_key not in admin_client.get(admin_url("apikey", CHANGELIST)).content.decode()

    assert api_status(new_key) == 200 and api_status(old.key) == 200
    move_clock(timedelta(hours=1, minutes=59))
    assert api_status(old.key) == 200
    move_clock(timedelta(hours=2, seconds=1))
    assert api_status(old.key) == 401
    assert api_status(new_key) == 200


def test_the_rotation_redirects_to_a_page_that_shows_the_new_keys_once(admin_client, workspace):
    """Issue 27, item 6: the new keys' page was the answer to the action's POST, so a
    reload rotated again. Now the POST redirects, and the page shows them once."""
    first, second = APIKeyFactory.create_batch(2, workspace=workspace)
    posted = rotate(admin_client, first, second, post="yes", grace_hours="1")
    assert posted["Location"] == admin_url("apikey", "rotated")
    new_keys = shown_once(admin_client, posted, KEY_SHAPE)
    new = APIKey.objects.exclude(pk__in=[first.pk, second.pk])
    assert sorted(crypto.digest(key) for key in new_keys) == sorted(k.digest for k in new)
    assert new.count() == 2
    assert AuditEvent.objects.filter(action="api_key.rotated").count() == 2


def test_the_rotated_keys_page_needs_the_rotate_permissions(workspace, api_key):
    viewer = staff_client("view_apikey", "change_apikey")
    assert viewer.get(admin_url("apikey", "rotated")).status_code == 403


def test_a_grace_of_zero_revokes_the_old_keys_at_once(admin_client, workspace):
    first, second = APIKeyFactory.create_batch(2, workspace=workspace)
    response = rotate(admin_client, first, second, post="yes", grace_hours="0", follow=True)
    new_keys = KEY_SHAPE.findall(response.content.decode())
    assert len(set(new_keys)) == 2
    assert "revoked: requests with them are refused" in response.content.decode()
    assert api_status(first.key) == 401 and api_status(second.key) == 401
    assert all(api_status(key) == 200 for key in new_keys)


@pytest.mark.parametrize("hours", ["-1", "x", "", str(24 * 7 + 1)])
def test_a_bad_grace_asks_again_and_rotates_nothing(admin_client, api_key, hours):
    response = rotate(admin_client, api_key, post="yes", grace_hours=hours)
    html = response.content.decode()
    assert "Replace these API keys by new ones?" in html and "errorlist" in html
    assert APIKey.objects.count() == 1 and not KEY_SHAPE.search(html)


def test_revoked_and_expired_keys_are_left_out(admin_client, workspace):
    now = timezone.now()
    revoked = APIKeyFactory(workspace=workspace, revoked_at=now)
    expired = APIKeyFactory(workspace=workspace, expires_at=now - timedelta(days=1))
    response = rotate(admin_client, revoked, expired, follow=True)
    assert "revoked or expired: nothing to rotate" in response.content.decode()
    live = APIKeyFactory(workspace=workspace)
    page = rotate(admin_client, revoked, live).content.decode()
    assert "1 selected key revoked or expired stays as it is." in page
    rotate(admin_client, revoked, live, post="yes", grace_hours="0")
    assert APIKey.objects.count() == 4  # one new key, for the live one only


@pytest.mark.parametrize(
    "codenames", [("view_apikey", "change_apikey"), ("view_apikey", "add_apikey")]
)
def test_the_action_needs_add_and_change(workspace, api_key, codenames):
    client = staff_client(*codenames)
    html = client.get(admin_url("apikey", CHANGELIST)).content.decode()
    assert 'value="rotate_keys"' not in html
    rotate(client, api_key, post="yes", grace_hours="0")
    assert APIKey.objects.count() == 1 and api_status(api_key.key) == 200


def test_staff_with_add_and_change_may_rotate(workspace, api_key):
    client = staff_client("view_apikey", "add_apikey", "change_apikey")
    response = rotate(client, api_key, post="yes", grace_hours="0", follow=True)
    assert len(KEY_SHAPE.findall(response.content.decode())) == 1
    assert api_status(api_key.key) == 401

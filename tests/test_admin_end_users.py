"""End users in the admin: the list (search, filters, offered lookups only), the forms
with the API's rules, and the person's embed tokens revoked or the person disabled,
each through services.end_users (its signals) and asked first."""

from unittest import mock

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.messages import get_messages

from tests.support.admin import admin_url, staff_client
from tests.support.factories import WorkspaceFactory
from usergroups.models import EndUser
from usergroups.services import end_users
from usergroups.signals import (
    end_user_created,
    end_user_deleted,
    end_user_tokens_revoked,
    end_user_updated,
)

pytestmark = pytest.mark.django_db


def make(workspace, end_user_id, **changes):
    record, _created = end_users.put_end_user(workspace.pk, end_user_id, changes)
    return EndUser.objects.get(pk=record.pk)


@pytest.fixture
def ada(workspace):
    return make(workspace, "ada", display_name="Ada Lovelace", attributes={"region": "EMEA"})


@pytest.fixture
def received():
    events = []
    signals = [end_user_created, end_user_updated, end_user_deleted, end_user_tokens_revoked]
    names = ["created", "updated", "deleted", "tokens_revoked"]
    for name, signal in zip(names, signals, strict=True):

        def receiver(sender, end_user, name=name, **kwargs):
            events.append((name, end_user.end_user_id))

        signal.connect(receiver, weak=False, dispatch_uid=f"admin-end-users-{name}")
    yield events
    for name, signal in zip(names, signals, strict=True):
        signal.disconnect(dispatch_uid=f"admin-end-users-{name}")


def form_data(**fields):
    data = {"end_user_id": "ada", "display_name": "", "attributes": "", "disabled": ""}
    data.update(fields)
    return {key: value for key, value in data.items() if value is not None}


# The list --------------------------------------------------------------------------------


def changelist_ids(client, query=""):
    response = client.get(admin_url("enduser", "changelist") + query)
    assert response.status_code == 200
    return [row.end_user_id for row in response.context["cl"].result_list]


def test_list_search_and_filters(admin_client, workspace, ada):
    other = WorkspaceFactory.create()
    make(workspace, "bob", display_name="Bob", disabled=True)
    make(other, "ada", display_name="Another Ada")
    assert changelist_ids(admin_client) == ["ada", "ada", "bob"]
    assert changelist_ids(admin_client, "?q=lovelace") == ["ada"]
    assert changelist_ids(admin_client, "?q=bob") == ["bob"]
    assert changelist_ids(admin_client, "?disabled__exact=1") == ["bob"]
    assert changelist_ids(admin_client, f"?workspace__id__exact={other.pk}") == ["ada"]
    html = admin_client.get(admin_url("enduser", "changelist")).content.decode()
    assert "Ada Lovelace" in html and "EMEA" not in html  # attributes stay off the list


@pytest.mark.parametrize(
    "query", ["?attributes__contains=EMEA", "?end_user_id__regex=a", "?tokens_revoked_at__isnull=1"]
)
def test_list_filters_only_on_what_it_offers(admin_client, ada, query):
    assert admin_client.get(admin_url("enduser", "changelist") + query).status_code == 400


# The forms -------------------------------------------------------------------------------


def test_add_creates_through_the_service(
    admin_client, workspace, received, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            admin_url("enduser", "add"),
            form_data(workspace=str(workspace.pk), attributes='{"region": "EMEA", "n": [1, 2]}'),
        )
    assert response.status_code == 302, response.context["adminform"].form.errors
    person = EndUser.objects.get()
    assert person.workspace == workspace
    assert person.display_name == "ada"  # empty: the id
    assert person.attributes == {"region": "EMEA", "n": [1, 2]}
    assert received == [("created", "ada")]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"attributes": "[1]"}, "attributes"),
        ({"attributes": "{bad"}, "attributes"),
        ({"attributes": '{"a": "' + "x" * 65536 + '"}'}, "attributes"),
        ({"end_user_id": ""}, "end_user_id"),
        ({"end_user_id": "x" * 256}, "end_user_id"),
        ({"display_name": "a\x00b"}, "display_name"),
    ],
)
def test_add_refuses_what_the_api_refuses(admin_client, workspace, fields, field):
    response = admin_client.post(
        admin_url("enduser", "add"), form_data(workspace=str(workspace.pk), **fields)
    )
    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors
    assert not EndUser.objects.exists()


def test_add_refuses_an_id_the_workspace_has(admin_client, workspace, ada):
    response = admin_client.post(
        admin_url("enduser", "add"), form_data(workspace=str(workspace.pk))
    )
    assert "end_user_id" in response.context["adminform"].form.errors
    assert EndUser.objects.count() == 1


def test_change_edits_attributes_as_json_through_the_service(
    admin_client, ada, received, django_capture_on_commit_callbacks
):
    url = admin_url("enduser", "change", ada.pk)
    html = admin_client.get(url).content.decode()
    assert "&quot;region&quot;: &quot;EMEA&quot;" in html  # the attributes, as JSON text
    assert 'name="end_user_id"' not in html and 'name="workspace"' not in html  # read-only
    assert admin_url("enduser", "revoke_tokens", ada.pk) in html
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            url,
            form_data(end_user_id=None, display_name="Ada L.", attributes='{"region": "APAC"}'),
        )
    assert response.status_code == 302
    ada.refresh_from_db()
    assert (ada.display_name, ada.attributes) == ("Ada L.", {"region": "APAC"})
    assert received == [("updated", "ada")]


def test_unchanged_form_writes_nothing(
    admin_client, ada, received, django_capture_on_commit_callbacks
):
    before = ada.updated_at
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(
            admin_url("enduser", "change", ada.pk),
            form_data(
                end_user_id=None, display_name="Ada Lovelace", attributes='{"region": "EMEA"}'
            ),
        )
    ada.refresh_from_db()
    assert ada.updated_at == before and received == []


def test_disabling_in_the_form_revokes(admin_client, ada):
    admin_client.post(
        admin_url("enduser", "change", ada.pk),
        form_data(
            end_user_id=None,
            display_name="Ada Lovelace",
            attributes='{"region": "EMEA"}',
            disabled="on",
        ),
    )
    ada.refresh_from_db()
    assert ada.disabled and ada.tokens_revoked_at is not None


def test_delete_goes_through_the_service(
    admin_client, ada, received, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(admin_url("enduser", "delete", ada.pk), {"post": "yes"})
    assert response.status_code == 302
    assert not EndUser.objects.exists()
    assert received == [("deleted", "ada")]


# Revoking a person's tokens, disabling -----------------------------------------------------


def test_revoke_asks_first_then_stamps_the_person(
    admin_client, ada, received, django_capture_on_commit_callbacks
):
    url = admin_url("enduser", "revoke_tokens", ada.pk)
    page = admin_client.get(url)
    assert page.status_code == 200
    assert "Revoke every embed token of this end user?" in page.content.decode()
    ada.refresh_from_db()
    assert ada.tokens_revoked_at is None  # asking changes nothing
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(url)
    assert response.status_code == 302
    assert response["Location"] == admin_url("enduser", "change", ada.pk)
    ada.refresh_from_db()
    assert ada.tokens_revoked_at is not None and not ada.disabled
    assert received == [("tokens_revoked", "ada")]
    entry = LogEntry.objects.get(object_id=str(ada.pk))
    assert entry.action_flag == CHANGE and "Revoked the embed tokens" in entry.get_change_message()
    assert any("were revoked" in str(m) for m in get_messages(response.wsgi_request))


def test_revoke_needs_change_permission(ada):
    viewer = staff_client("view_enduser")
    assert viewer.post(admin_url("enduser", "revoke_tokens", ada.pk)).status_code == 403
    ada.refresh_from_db()
    assert ada.tokens_revoked_at is None


def test_revoke_of_a_missing_person_redirects(admin_client, db):
    response = admin_client.post(admin_url("enduser", "revoke_tokens", 999))
    assert response.status_code == 302 and response["Location"] == "/admin/"


def action(client, name, people, confirm):
    data = {"action": name, "_selected_action": [str(p.pk) for p in people]}
    if confirm:
        data["post"] = "yes"
    return client.post(admin_url("enduser", "changelist"), data)


def test_bulk_disable_asks_first_then_disables(admin_client, workspace, ada, received):
    bob = make(workspace, "bob")
    page = action(admin_client, "disable", [ada, bob], confirm=False)
    assert page.status_code == 200 and "Disable these end users?" in page.content.decode()
    assert not EndUser.objects.filter(disabled=True).exists()
    response = action(admin_client, "disable", [ada, bob], confirm=True)
    assert response.status_code == 302
    for person in (ada, bob):
        person.refresh_from_db()
        assert person.disabled and person.tokens_revoked_at is not None
    assert any("Disabled 2 end users" in str(m) for m in get_messages(response.wsgi_request))


def test_bulk_revoke(admin_client, workspace, ada):
    bob = make(workspace, "bob")
    action(admin_client, "revoke_tokens", [ada, bob], confirm=True)
    assert EndUser.objects.filter(tokens_revoked_at__isnull=False, disabled=False).count() == 2


def test_actions_need_change_permission(ada):
    viewer = staff_client("view_enduser")
    action(viewer, "disable", [ada], confirm=True)
    ada.refresh_from_db()
    assert not ada.disabled


def test_no_secret_on_any_page(admin_client, workspace, ada, api_key):
    pages = [
        admin_url("enduser", "changelist"),
        admin_url("enduser", "change", ada.pk),
        admin_url("enduser", "revoke_tokens", ada.pk),
        admin_url("enduser", "add"),
    ]
    for url in pages:
        html = admin_client.get(url).content.decode()
        assert api_key.key not in html and api_key.digest not in html
        assert "ugk_" not in html and "ugt_" not in html


def test_bulk_delete_goes_through_the_service(
    admin_client, workspace, ada, received, django_capture_on_commit_callbacks
):
    bob = make(workspace, "bob")
    with django_capture_on_commit_callbacks(execute=True):
        action(admin_client, "delete_selected", [ada, bob], confirm=True)
    assert not EndUser.objects.exists()
    assert sorted(received) == [("deleted", "ada"), ("deleted", "bob")]


def test_bulk_revoke_asks_first(admin_client, ada):
    page = action(admin_client, "revoke_tokens", [ada], confirm=False)
    assert "Revoke every embed token of these end users?" in page.content.decode()
    ada.refresh_from_db()
    assert ada.tokens_revoked_at is None


def test_viewers_see_the_person_read_only(ada):
    viewer = staff_client("view_enduser")
    html = viewer.get(admin_url("enduser", "change", ada.pk)).content.decode()
    assert "Ada Lovelace" in html and 'name="attributes"' not in html
    assert admin_url("enduser", "revoke_tokens", ada.pk) not in html


def test_a_person_deleted_while_the_form_is_saved_is_404(admin_client, ada):
    with mock.patch.object(end_users, "update_end_user", return_value=None):
        response = admin_client.post(
            admin_url("enduser", "change", ada.pk), form_data(end_user_id=None, display_name="X")
        )
    assert response.status_code == 404


def test_a_person_deleted_while_revoked_redirects(admin_client, ada):
    with mock.patch.object(end_users, "revoke_tokens", return_value=None):
        response = admin_client.post(admin_url("enduser", "revoke_tokens", ada.pk))
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert not LogEntry.objects.exists()

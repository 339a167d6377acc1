"""The user group admin: list, edit with the API's rules, token visibility and rotation."""

import json
from datetime import timedelta
from unittest import mock

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.messages import get_messages
from django.test import Client
from django.utils import timezone

from tests.support.admin import admin_url, group_form, staff_client
from tests.support.api import API_URL
from tests.support.factories import SchemaMappingFactory, UserGroupFactory, WorkspaceFactory
from usergroups import services, signals
from usergroups.models import SchemaMapping, UserGroup

pytestmark = pytest.mark.django_db


def secrets_of(group):
    group.refresh_from_db()
    return [group.token, group.token_digest, group.token_sealed]


# The change list -----------------------------------------------------------------------


def test_changelist_shows_the_columns_and_never_a_token(admin_client, group):
    SchemaMappingFactory.create_batch(3, group=group)
    group.refresh_from_db()
    group.token_rotated_at = timezone.now()
    response = admin_client.get(admin_url("usergroup", "changelist"))
    assert response.status_code == 200
    html = response.content.decode()
    for header in ("Name", "Provided id", "Workspace", "Team id", "Mappings", "Created"):
        assert header in html
    assert "Token rotated" in html
    assert group.name in html and group.provided_id in html and str(group.workspace) in html
    assert '<td class="field-mapping_count">3</td>' in html
    for secret in secrets_of(group):
        assert secret not in html


@pytest.mark.parametrize("field", ["name", "provided_id", "team_id"])
def test_search_by_name_provided_id_and_team_id(admin_client, workspace, field):
    target = UserGroupFactory(workspace=workspace, provided_id="cust-7781", name="Blue Harbor")
    other = UserGroupFactory(workspace=workspace, provided_id="cust-2", name="Red Hill")
    term = {"name": "harbor", "provided_id": "7781", "team_id": str(target.team_id)}[field]
    response = admin_client.get(admin_url("usergroup", "changelist"), {"q": term})
    groups = list(response.context["cl"].result_list)
    assert groups == [target]
    assert other not in groups


def test_search_with_text_is_no_error_for_the_numeric_team_id(admin_client, group):
    response = admin_client.get(admin_url("usergroup", "changelist"), {"q": "no such' group"})
    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == []


def test_filters_by_workspace_and_dates(admin_client):
    north, south = WorkspaceFactory(slug="north"), WorkspaceFactory(slug="south")
    old = UserGroupFactory(workspace=north, created_at=timezone.now() - timedelta(days=60))
    new = UserGroupFactory(workspace=north)
    other = UserGroupFactory(workspace=south)
    services.groups.rotate_group_token(new)
    url = admin_url("usergroup", "changelist")

    def listed(**params):
        return set(admin_client.get(url, params).context["cl"].result_list)

    assert listed(workspace__id__exact=north.pk) == {old, new}
    assert listed(workspace__id__exact=south.pk) == {other}
    since = (timezone.now() - timedelta(days=7)).isoformat()
    assert listed(created_at__gte=since) == {new, other}
    assert listed(token_rotated_at__isnull="False") == {new}
    html = admin_client.get(url).content.decode()
    for title in ("By workspace", "By created at", "By token rotated at"):
        assert title in html


def test_ordering_newest_first_and_by_mapping_count(admin_client, workspace):
    first = UserGroupFactory(workspace=workspace, created_at=timezone.now() - timedelta(days=2))
    second = UserGroupFactory(workspace=workspace, created_at=timezone.now() - timedelta(days=1))
    SchemaMappingFactory.create_batch(2, group=first)
    url = admin_url("usergroup", "changelist")
    assert list(admin_client.get(url).context["cl"].result_list) == [second, first]
    # Column 5 is "Mappings"; "-5" sorts it descending.
    by_count = admin_client.get(url, {"o": "-5"}).context["cl"].result_list
    assert [group.mapping_count for group in by_count] == [2, 0]


def test_changelist_of_100_groups_makes_a_fixed_number_of_queries(
    admin_client, django_assert_max_num_queries
):
    workspaces = WorkspaceFactory.create_batch(5)
    for i in range(100):
        group = UserGroupFactory(workspace=workspaces[i % 5])
        SchemaMappingFactory.create_batch(i % 3, group=group)
    url = admin_url("usergroup", "changelist")
    # session, user, filtered count, full count, the page, the workspace filter: no N+1.
    with django_assert_max_num_queries(8):
        response = admin_client.get(url)
    assert len(response.context["cl"].result_list) == 100
    with django_assert_max_num_queries(8):
        admin_client.get(
            url, {"q": "customer", "o": "-5", "workspace__id__exact": workspaces[0].pk}
        )


# The change page -----------------------------------------------------------------------


def test_change_page_has_fieldsets_mappings_inline_and_json_properties(admin_client, group):
    SchemaMappingFactory(group=group, schema_id="sales", data_source_id="db-1")
    response = admin_client.get(admin_url("usergroup", "change", group.pk))
    html = response.content.decode()
    assert response.status_code == 200
    assert "Mapping: schema id → data source id" in html
    assert 'value="sales"' in html and 'value="db-1"' in html
    assert "{\n  &quot;region&quot;: &quot;EU&quot;\n}" in html  # pretty-printed JSON
    for legend in ("Properties", "Token", "Record"):
        assert f">{legend}</h2>" in html
    assert "Rotate token" in html


def test_properties_bad_json_is_a_clear_error(admin_client, group):
    data = group_form(properties='{"region": "EU",}')
    response = admin_client.post(admin_url("usergroup", "change", group.pk), data)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors["properties"]
    # Python's own reason, which differs between versions, with the place of the error.
    assert errors[0].startswith("Invalid JSON: ")
    assert "line 1 column 1" in errors[0]
    # What was typed is kept for correction.
    assert "{&quot;region&quot;: &quot;EU&quot;,}" in response.content.decode()


@pytest.mark.parametrize(
    "text, message",
    [
        ('["a", "b"]', "Must be a JSON object."),
        ('{"score": NaN}', "Invalid JSON: NaN is not valid JSON"),
        ("[" * 40 + "]" * 40, "JSON is nested too deep."),
        ('{"a":' * 40 + "1" + "}" * 40, "JSON is nested too deep."),
        ('{"a": "\\u0000"}', "Must not contain NUL characters."),
    ],
)
def test_properties_follow_the_api_rules(admin_client, group, text, message):
    response = admin_client.post(
        admin_url("usergroup", "change", group.pk), group_form(properties=text)
    )
    assert response.context["adminform"].form.errors["properties"] == [message]


def test_properties_size_limit_follows_the_setting(admin_client, group, settings):
    settings.USERGROUPS = {"MAX_PROPERTIES_BYTES": 20}
    data = group_form(properties=json.dumps({"text": "x" * 30}))
    response = admin_client.post(admin_url("usergroup", "change", group.pk), data)
    assert response.context["adminform"].form.errors["properties"] == [
        "Must be at most 20 bytes as JSON."
    ]


def test_valid_properties_and_mappings_are_saved_as_given(admin_client, group):
    data = group_form(
        provided_id=" spaced id ",
        name="Acme Corp",
        properties='{"region": "EU", "tier": 2}',
        mappings=[("sales ", "db-1"), ("hr", "42")],
    )
    response = admin_client.post(admin_url("usergroup", "change", group.pk), data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    group.refresh_from_db()
    assert (group.provided_id, group.name) == (" spaced id ", "Acme Corp")
    assert group.properties == {"region": "EU", "tier": 2}
    assert dict(group.mappings.values_list("schema_id", "data_source_id")) == {
        "sales ": "db-1",
        "hr": "42",
    }


def test_empty_properties_store_null(admin_client, group):
    admin_client.post(admin_url("usergroup", "change", group.pk), group_form(properties="  "))
    group.refresh_from_db()
    assert group.properties is None


@pytest.mark.parametrize(
    "schema_id, source, field, message",
    [
        ("sales\x00", "db", "schema_id", "Must not contain NUL characters."),
        ("s" * 256, "db", "schema_id", "Must be at most 255 characters."),
        ("sales", "", "data_source_id", "This field is required."),
        ("sales", "d\x00b", "data_source_id", "Must not contain NUL characters."),
    ],
)
def test_mapping_rows_follow_the_api_rules(admin_client, group, schema_id, source, field, message):
    data = group_form(mappings=[(schema_id, source)])
    response = admin_client.post(admin_url("usergroup", "change", group.pk), data)
    assert response.status_code == 200
    formset = response.context["inline_admin_formsets"][0].formset
    assert formset.forms[0].errors[field] == [message]
    assert not SchemaMapping.objects.exists()


def test_mapping_size_limit_and_duplicates(admin_client, group, settings):
    url = admin_url("usergroup", "change", group.pk)
    settings.USERGROUPS = {"MAX_MAPPING_ENTRIES": 1}
    response = admin_client.post(url, group_form(mappings=[("a", "1"), ("b", "2")]))
    formset = response.context["inline_admin_formsets"][0].formset
    assert formset.non_form_errors() == ["Must map at most 1 schema ids."]
    settings.USERGROUPS = {}
    response = admin_client.post(url, group_form(mappings=[("a", "1"), ("a", "2")]))
    formset = response.context["inline_admin_formsets"][0].formset
    assert "Please correct the duplicate data for schema_id" in formset.non_form_errors()[0]
    assert not SchemaMapping.objects.exists()


def test_provided_id_is_unique_per_workspace(admin_client, workspace):
    first = UserGroupFactory(workspace=workspace, provided_id="taken")
    second = UserGroupFactory(workspace=workspace, provided_id="free")
    UserGroupFactory(provided_id="elsewhere")  # another workspace may use any id
    response = admin_client.post(
        admin_url("usergroup", "change", second.pk), group_form(provided_id="taken")
    )
    assert response.context["adminform"].form.errors["provided_id"] == [
        "Another user group of this workspace has this provided id."
    ]
    response = admin_client.post(
        admin_url("usergroup", "add"), group_form(provided_id="taken", workspace=workspace)
    )
    assert response.context["adminform"].form.errors["provided_id"] == [
        "Another user group of this workspace has this provided id."
    ]
    response = admin_client.post(
        admin_url("usergroup", "add"), group_form(provided_id="elsewhere", workspace=workspace)
    )
    assert response.status_code == 302
    assert first.provided_id == "taken"


def test_add_makes_a_group_with_a_token_usable_by_the_api(admin_client, workspace, api_client):
    data = group_form(
        provided_id="new-co",
        name="",
        properties='{"plan": "pro"}',
        mappings=[("sales", "db-9")],
        workspace=workspace,
    )
    response = admin_client.post(admin_url("usergroup", "add"), data)
    assert response.status_code == 302
    group = UserGroup.objects.get(provided_id="new-co")
    assert group.name == "new-co"  # like the API: the name defaults to the id
    answer = api_client.get(API_URL, {"user_group_id": "new-co"}).json()
    assert answer["new_user_group"] is False
    assert answer["user_group"]["token"] == group.token
    assert answer["user_group"]["mapping"] == {"sales": "db-9"}
    assert answer["user_group"]["properties"] == {"plan": "pro"}


def test_workspace_cannot_be_changed_on_an_existing_group(admin_client, group):
    other = WorkspaceFactory()
    data = group_form(provided_id=group.provided_id, name=group.name, workspace=other)
    admin_client.post(admin_url("usergroup", "change", group.pk), data)
    group.refresh_from_db()
    assert group.workspace_id != other.pk


def test_saving_the_form_never_writes_back_a_token_rotated_meanwhile(admin_client, group):
    from usergroups.admin.forms import UserGroupAdminForm

    old = group.token
    original_clean = UserGroupAdminForm.clean
    rotated = {}

    def clean_while_the_api_rotates(form):
        rotated["group"] = services.groups.rotate_token(group.workspace_id, old)
        return original_clean(form)

    with mock.patch.object(UserGroupAdminForm, "clean", clean_while_the_api_rotates):
        response = admin_client.post(
            admin_url("usergroup", "change", group.pk), group_form(name="Renamed")
        )
    assert response.status_code == 302
    group = UserGroup.objects.get(pk=group.pk)
    assert group.name == "Renamed"
    assert group.token == rotated["group"].token != old


# Who sees the token --------------------------------------------------------------------


def test_token_is_in_the_page_only_with_the_view_token_permission(group):
    change_url = admin_url("usergroup", "change", group.pk)
    without = staff_client("view_usergroup", "change_usergroup", username="without")
    html = without.get(change_url).content.decode()
    assert "Hidden. Seeing it needs the permission “Can view user group tokens”." in html
    for secret in secrets_of(group):
        assert secret not in html
    with_perm = staff_client("view_usergroup", "view_token", username="with")
    html = with_perm.get(change_url).content.decode()
    assert html.count(group.token) == 1
    assert "data-ug-copy" in html and "data-ug-reveal" in html
    assert "data-ug-value hidden" in html  # hidden until revealed
    assert group.token_sealed not in html and group.token_digest not in html


def test_superuser_sees_the_token_never_in_the_list_or_history(admin_client, group):
    assert (
        group.token in admin_client.get(admin_url("usergroup", "change", group.pk)).content.decode()
    )
    for url in (admin_url("usergroup", "changelist"), admin_url("usergroup", "history", group.pk)):
        assert group.token not in admin_client.get(url).content.decode()


# Rotation ------------------------------------------------------------------------------


def test_rotation_goes_through_a_confirmation_and_the_old_token_is_refused(
    admin_client, group, api_client, django_capture_on_commit_callbacks
):
    old = group.token
    url = admin_url("usergroup", "rotate_token", group.pk)
    page = admin_client.get(url)
    html = page.content.decode()
    assert page.status_code == 200
    assert 'method="post"' in html and "csrfmiddlewaretoken" in html
    assert "Rotate the token of this user group?" in html
    # What else ends: every open embedded dashboard of the group (its embed tokens).
    assert "each open embedded dashboard of the group ends" in html
    assert UserGroup.objects.get(pk=group.pk).token == old  # GET changes nothing

    received = []
    signals.token_rotated.connect(
        lambda sender, group, **kw: received.append(group.team_id), weak=False
    )
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = admin_client.post(url)
    finally:
        signals.token_rotated.disconnect(dispatch_uid=None)
    assert response.status_code == 302
    assert response["Location"] == admin_url("usergroup", "change", group.pk)
    new = UserGroup.objects.get(pk=group.pk).token
    assert new != old
    assert received == [group.pk]

    message = [str(m) for m in get_messages(response.wsgi_request)]
    assert message == [f"The token of “{group}” was rotated. The old token no longer works."]
    assert new not in message[0]
    entry = LogEntry.objects.get(object_id=str(group.pk))
    assert (entry.action_flag, entry.change_message) == (CHANGE, "Rotated the token.")
    history = admin_client.get(admin_url("usergroup", "history", group.pk)).content.decode()
    assert "Rotated the token." in history and new not in history

    assert api_client.post(API_URL, {"current_token": old}, format="json").status_code == 404
    answer = api_client.post(API_URL, {"current_token": new}, format="json")
    assert answer.status_code == 200


def test_rotation_message_tells_about_the_grace_period(admin_client, group, settings):
    settings.USERGROUPS = {"ROTATION_GRACE_SECONDS": 30}
    response = admin_client.post(admin_url("usergroup", "rotate_token", group.pk), follow=True)
    assert "The old token still resolves for 30 seconds" in response.content.decode()


def test_rotation_is_csrf_protected(group, admin_user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    old = group.token
    assert client.post(admin_url("usergroup", "rotate_token", group.pk)).status_code == 403
    assert UserGroup.objects.get(pk=group.pk).token == old


def test_rotation_needs_the_change_permission(group):
    viewer = staff_client("view_usergroup", "view_token")
    old = group.token
    change_page = viewer.get(admin_url("usergroup", "change", group.pk)).content.decode()
    assert "Rotate token" not in change_page
    url = admin_url("usergroup", "rotate_token", group.pk)
    assert viewer.get(url).status_code == 403
    assert viewer.post(url).status_code == 403
    assert UserGroup.objects.get(pk=group.pk).token == old
    assert not LogEntry.objects.exists()


def test_rotation_of_a_token_changed_meanwhile_changes_nothing(admin_client, group):
    with mock.patch.object(services.groups, "rotate_group_token", return_value=None):
        response = admin_client.post(admin_url("usergroup", "rotate_token", group.pk), follow=True)
    assert "changed meanwhile; nothing was rotated" in response.content.decode()
    assert not LogEntry.objects.exists()


def test_rotation_of_an_unknown_group_redirects(admin_client):
    response = admin_client.get(admin_url("usergroup", "rotate_token", 987654))
    assert response.status_code == 302
    page = admin_client.get(response.url).content.decode()
    assert "User group with ID “987654” doesn’t exist. Perhaps it was deleted?" in page


def test_bulk_rotation_asks_first_then_rotates_each(admin_client, workspace, api_client):
    groups = UserGroupFactory.create_batch(3, workspace=workspace)
    untouched = UserGroupFactory(workspace=workspace)
    old = {g.pk: g.token for g in groups}
    url = admin_url("usergroup", "changelist")
    selection = {"action": "rotate_tokens", "_selected_action": [g.pk for g in groups]}

    page = admin_client.post(url, selection)
    html = page.content.decode()
    assert page.status_code == 200
    assert "Rotate the tokens of these user groups?" in html
    assert all(str(g) in html for g in groups)
    assert {g.pk: UserGroup.objects.get(pk=g.pk).token for g in groups} == old

    response = admin_client.post(url, {**selection, "post": "yes"}, follow=True)
    html = response.content.decode()
    assert "Rotated the tokens of 3 user groups. The old token no longer works." in html
    for g in groups:
        new = UserGroup.objects.get(pk=g.pk).token
        assert new != old[g.pk] and new not in html
        assert (
            api_client.post(API_URL, {"current_token": old[g.pk]}, format="json").status_code == 404
        )
    assert UserGroup.objects.get(pk=untouched.pk).token == untouched.token
    assert LogEntry.objects.filter(change_message="Rotated the token.").count() == 3


def test_bulk_rotation_needs_the_change_permission(group):
    viewer = staff_client("view_usergroup")
    url = admin_url("usergroup", "changelist")
    assert "rotate_tokens" not in viewer.get(url).content.decode()
    viewer.post(url, {"action": "rotate_tokens", "_selected_action": [group.pk], "post": "yes"})
    assert UserGroup.objects.get(pk=group.pk).token == group.token


def test_view_only_staff_sees_a_read_only_page(group):
    viewer = staff_client("view_usergroup")
    response = viewer.get(admin_url("usergroup", "change", group.pk))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'name="_save"' not in html
    assert group.token not in html

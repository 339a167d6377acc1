"""The group hierarchy in the admin: the parent as an autocomplete field kept to the
API's rules, children counts, computed values, cascade delete through the confirmation."""

from django.contrib.admin.models import DELETION, LogEntry

from tests.support.admin import admin_url, group_form
from tests.support.factories import SchemaMappingFactory, UserGroupFactory, WorkspaceFactory
from usergroups import signals
from usergroups.models import UserGroup


def family(workspace):
    """root > child > grandchild, and a second child of root."""
    root = UserGroupFactory(workspace=workspace, provided_id="root", properties={"a": 1, "b": 1})
    SchemaMappingFactory(group=root, schema_id="sales", data_source_id="root-db")
    child = UserGroupFactory(
        workspace=workspace, provided_id="child", parent=root, properties={"b": 2}
    )
    grandchild = UserGroupFactory(
        workspace=workspace, provided_id="grandchild", parent=child, properties=None
    )
    other = UserGroupFactory(workspace=workspace, provided_id="other-child", parent=root)
    return root, child, grandchild, other


def test_changelist_shows_children_counts(admin_client, workspace):
    root, child, grandchild, _other = family(workspace)
    response = admin_client.get(admin_url("usergroup", "changelist") + "?o=6")  # by children
    assert response.status_code == 200
    rows = response.context["cl"].result_list
    assert {group.provided_id: group.children_count for group in rows} == {
        "root": 2,
        "child": 1,
        "grandchild": 0,
        "other-child": 0,
    }
    assert "Children" in response.content.decode()


def test_change_page_has_the_parent_autocomplete_and_the_computed_values(admin_client, workspace):
    _root, _child, grandchild, _other = family(workspace)
    response = admin_client.get(admin_url("usergroup", "change", grandchild.pk))
    page = response.content.decode()
    assert response.status_code == 200
    assert 'class="admin-autocomplete' in page and 'data-field-name="parent"' in page
    assert "Computed properties" in page and "Computed mapping" in page
    computed = response.context["adminform"].form.instance
    record = response.context["adminform"].model_admin.group_record(computed)
    assert record.computed_properties == {"a": 1, "b": 2}
    assert record.computed_mapping == {"sales": "root-db"}
    assert "&quot;sales&quot;: &quot;root-db&quot;" in page


def test_the_autocomplete_finds_groups(admin_client, workspace):
    family(workspace)
    url = "/admin/autocomplete/?app_label=usergroups&model_name=usergroup&field_name=parent"
    response = admin_client.get(url + "&term=child")
    assert response.status_code == 200
    found = {item["text"] for item in response.json()["results"]}
    assert found == {
        "Customer child (child)",
        "Customer grandchild (grandchild)",
        "Customer other-child (other-child)",
    }


def post_change(admin_client, group, parent):
    data = group_form(provided_id=group.provided_id, name=group.name)
    data["parent"] = "" if parent is None else str(parent.pk)
    return admin_client.post(admin_url("usergroup", "change", group.pk), data)


def test_setting_the_parent_moves_the_group_and_sends_group_moved(
    admin_client, workspace, django_capture_on_commit_callbacks
):
    root, child, _grandchild, other = family(workspace)
    moves = []
    signals.group_moved.connect(
        lambda sender, **kw: moves.append(kw), dispatch_uid="t-admin", weak=False
    )
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = post_change(admin_client, child, other)
    finally:
        signals.group_moved.disconnect(dispatch_uid="t-admin")
    assert response.status_code == 302, response.content
    assert UserGroup.objects.get(pk=child.pk).parent_id == other.pk
    assert [(m["old_parent_id"], m["new_parent_id"]) for m in moves] == [(root.pk, other.pk)]
    assert post_change(admin_client, child, None).status_code == 302
    assert UserGroup.objects.get(pk=child.pk).parent_id is None


def test_the_form_refuses_a_cycle_and_another_workspaces_parent(admin_client, workspace):
    root, child, grandchild, _other = family(workspace)
    stranger = UserGroupFactory(workspace=WorkspaceFactory())
    for parent, message in [
        (grandchild, "under itself or one of its descendants"),
        (root, "under itself"),
        (stranger, "same workspace"),
    ]:
        moved = root if parent is not stranger else child
        response = post_change(admin_client, moved, parent)
        assert response.status_code == 200  # the form again, with the error
        assert message in response.content.decode()
    assert UserGroup.objects.get(pk=root.pk).parent_id is None
    assert UserGroup.objects.get(pk=child.pk).parent_id == root.pk


def test_add_under_a_parent_at_the_deepest_level_is_refused(admin_client, workspace, settings):
    settings.USERGROUPS = {"MAX_HIERARCHY_DEPTH": 3}
    _root, _child, grandchild, _other = family(workspace)
    data = group_form(provided_id="new", workspace=workspace)
    data["parent"] = str(grandchild.pk)
    response = admin_client.post(admin_url("usergroup", "add"), data)
    assert response.status_code == 200
    assert "at most 3 are allowed" in response.content.decode()
    assert not UserGroup.objects.filter(provided_id="new").exists()
    data["parent"] = str(_child.pk)
    assert admin_client.post(admin_url("usergroup", "add"), data).status_code == 302
    assert UserGroup.objects.get(provided_id="new").parent_id == _child.pk


def test_delete_confirmation_lists_the_subtree_and_confirming_deletes_it(
    admin_client, workspace, django_capture_on_commit_callbacks
):
    root, child, grandchild, other = family(workspace)
    outside = UserGroupFactory(workspace=workspace, provided_id="outside")
    url = admin_url("usergroup", "delete", child.pk)
    page = admin_client.get(url).content.decode()
    assert "grandchild" in page and "other-child" not in page
    deleted = []
    signals.group_deleted.connect(
        lambda sender, **kw: deleted.append(kw["group"].provided_id),
        dispatch_uid="t-admin-del",
        weak=False,
    )
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = admin_client.post(url, {"post": "yes"})
    finally:
        signals.group_deleted.disconnect(dispatch_uid="t-admin-del")
    assert response.status_code == 302
    assert set(UserGroup.objects.values_list("pk", flat=True)) == {root.pk, other.pk, outside.pk}
    assert sorted(deleted) == ["child", "grandchild"]
    assert LogEntry.objects.filter(action_flag=DELETION, object_id=str(child.pk)).exists()

"""The workspace admin, and the admin as a whole."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.support.admin import admin_url
from tests.support.factories import APIKeyFactory, UserGroupFactory, WorkspaceFactory
from usergroups.models import Workspace

pytestmark = pytest.mark.django_db


def test_list_counts_groups_and_active_keys(admin_client):
    busy = WorkspaceFactory(slug="busy", name="Busy Co")
    idle = WorkspaceFactory(slug="idle", name="")
    UserGroupFactory.create_batch(3, workspace=busy)
    APIKeyFactory.create_batch(2, workspace=busy)
    APIKeyFactory(workspace=busy, revoked_at=timezone.now())
    APIKeyFactory(workspace=busy, expires_at=timezone.now() - timedelta(days=1))
    APIKeyFactory(workspace=busy, expires_at=timezone.now() + timedelta(days=1))
    response = admin_client.get(admin_url("workspace", "changelist"))
    counts = {
        w.slug: (w.group_count, w.active_key_count) for w in response.context["cl"].result_list
    }
    assert counts == {"busy": (3, 3), "idle": (0, 0)}
    html = response.content.decode()
    groups_url = admin_url("usergroup", "changelist")
    keys_url = admin_url("apikey", "changelist")
    assert f'<a href="{groups_url}?workspace__id__exact={busy.pk}">3</a>' in html
    assert f'<a href="{keys_url}?workspace__id__exact={busy.pk}&amp;state=active">3</a>' in html
    assert ">idle</a>" in html  # a workspace without a name is shown by its slug
    assert idle.pk


def test_counts_link_to_the_filtered_lists(admin_client):
    workspace = WorkspaceFactory()
    UserGroupFactory.create_batch(2, workspace=workspace)
    UserGroupFactory()
    response = admin_client.get(
        admin_url("usergroup", "changelist"), {"workspace__id__exact": workspace.pk}
    )
    assert len(response.context["cl"].result_list) == 2


def test_list_ordering_by_counts(admin_client):
    small, large = WorkspaceFactory(slug="a-small"), WorkspaceFactory(slug="b-large")
    UserGroupFactory.create_batch(2, workspace=large)
    UserGroupFactory(workspace=small)
    url = admin_url("workspace", "changelist")
    result = admin_client.get(url, {"o": "-3"}).context["cl"].result_list  # "User groups"
    assert [w.slug for w in result] == ["b-large", "a-small"]


def test_list_makes_a_fixed_number_of_queries(admin_client, django_assert_max_num_queries):
    for workspace in WorkspaceFactory.create_batch(30):
        UserGroupFactory.create_batch(2, workspace=workspace)
        APIKeyFactory(workspace=workspace)
    with django_assert_max_num_queries(6):
        response = admin_client.get(admin_url("workspace", "changelist"))
    assert len(response.context["cl"].result_list) == 30


def test_add_and_change_a_workspace(admin_client):
    response = admin_client.post(admin_url("workspace", "add"), {"name": "Acme", "slug": "acme"})
    assert response.status_code == 302
    workspace = Workspace.objects.get(slug="acme")
    html = admin_client.get(admin_url("workspace", "change", workspace.pk)).content.decode()
    assert "User groups" in html and "Active API keys" in html


@pytest.mark.parametrize("model", ["workspace", "apikey", "usergroup"])
def test_every_page_renders(admin_client, model, group, api_key):
    obj = {"workspace": group.workspace, "apikey": api_key, "usergroup": group}[model]
    for url in (
        admin_url(model, "changelist"),
        admin_url(model, "add"),
        admin_url(model, "change", obj.pk),
        admin_url(model, "history", obj.pk),
        admin_url(model, "delete", obj.pk),
    ):
        assert admin_client.get(url).status_code == 200, url
    index = admin_client.get("/admin/").content.decode()
    assert "API keys" in index and "User groups" in index and "Workspaces" in index

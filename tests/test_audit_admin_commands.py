"""The audit trail in the admin (read-only for everyone) and its commands: export_audit
streams JSON lines in constant memory, prune_audit deletes old events in batches."""

import io
import json
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import NoReverseMatch
from django.utils import timezone

from tests.support.admin import admin_url, staff_client
from tests.support.factories import WorkspaceFactory
from usergroups import audit_context
from usergroups.models import AuditEvent, Workspace
from usergroups.services import audit


def write(workspace_id, count, action=audit.USER_GROUP_CREATED, **fields):
    with audit_context.acting(audit_context.system("test")):
        return [audit.record(workspace_id, action, **fields) for _ in range(count)]


def aged(events, days):
    AuditEvent.objects.filter(pk__in=[e.pk for e in events]).update(
        at=timezone.now() - timedelta(days=days)
    )


# Admin --------------------------------------------------------------------------------------


def test_superusers_may_only_look(admin_client, workspace):
    (event,) = write(workspace.pk, 1, user_group_id="acme", details={"team_id": 1})
    listing = admin_client.get(admin_url("auditevent", "changelist"))
    assert listing.status_code == 200
    assert list(listing.context["cl"].result_list)[0] == event
    assert "delete_selected" not in listing.context["cl"].model_admin.get_actions(
        listing.wsgi_request
    )
    page = admin_client.get(admin_url("auditevent", "change", event.pk))
    assert page.status_code == 200
    html = page.content.decode()
    assert event.event_id in html and 'name="_save"' not in html
    assert admin_client.post(admin_url("auditevent", "change", event.pk), {}).status_code == 403
    for page_name in ("add", "delete"):
        with pytest.raises(NoReverseMatch):
            admin_url("auditevent", page_name, *([event.pk] if page_name == "delete" else []))
    assert admin_client.get("/admin/usergroups/auditevent/add/").status_code in (302, 404)
    assert admin_client.post(f"/admin/usergroups/auditevent/{event.pk}/delete/").status_code in (
        302,
        404,
    )
    bulk = {"action": "delete_selected", "_selected_action": [event.pk], "post": "yes"}
    admin_client.post(admin_url("auditevent", "changelist"), bulk)
    assert AuditEvent.objects.filter(pk=event.pk).exists()
    assert AuditEvent.objects.get(pk=event.pk).details == {"team_id": 1}


def test_staff_with_the_view_permission_see_events(workspace):
    write(workspace.pk, 2)
    viewer = staff_client("view_auditevent")
    assert viewer.get(admin_url("auditevent", "changelist")).status_code == 200
    assert (
        staff_client("view_usergroup", username="other")
        .get(admin_url("auditevent", "changelist"))
        .status_code
        == 403
    )


def test_filters_and_search(admin_client, workspace):
    write(workspace.pk, 2, audit.USER_GROUP_CREATED, user_group_id="acme")
    write(workspace.pk, 1, audit.END_USER_CREATED, end_user_id="ada")

    def shown(**params):
        response = admin_client.get(admin_url("auditevent", "changelist"), params)
        assert response.status_code == 200, params
        return sorted(e.action for e in response.context["cl"].result_list)

    assert shown(action="end_user.created") == ["end_user.created"]
    assert shown(q="acme") == ["user_group.created"] * 2
    assert shown(q="ada") == ["end_user.created"]
    assert shown(q="acm") == []  # whole values only: each search is an index lookup
    assert len(shown(actor_type="system")) == 3
    assert shown(actor_type="staff") == []
    assert (
        admin_client.get(
            admin_url("auditevent", "changelist"), {"details__contains": "x"}
        ).status_code
        == 400
    )


def test_a_workspace_with_events_cannot_be_deleted_in_the_admin(admin_client, workspace):
    write(workspace.pk, 1)
    url = admin_url("workspace", "delete", workspace.pk)
    admin_client.post(url, {"post": "yes"})
    assert Workspace.objects.filter(pk=workspace.pk).exists()
    assert AuditEvent.objects.filter(workspace=workspace).count() == 1


def test_the_delete_pages_say_why_a_workspace_with_events_is_kept(admin_client, workspace):
    """Not only Django's "your account doesn't have permission to delete ... audit event":
    the page says that events are kept, and what lets the workspace go."""
    write(workspace.pk, 1)
    page = admin_client.get(admin_url("workspace", "delete", workspace.pk)).content.decode()
    bulk = admin_client.post(
        admin_url("workspace", "changelist"),
        {"action": "delete_selected", "_selected_action": [workspace.pk]},
    ).content.decode()
    for html in (page, bulk):
        assert "doesn’t have permission to delete" in html or "permission to delete" in html
        assert "Audit events are kept" in html and "prune_audit" in html
    assert Workspace.objects.filter(pk=workspace.pk).exists()


def test_a_workspace_without_events_is_deleted_without_the_note(admin_client):
    empty = WorkspaceFactory()
    page = admin_client.get(admin_url("workspace", "delete", empty.pk)).content.decode()
    assert "Audit events are kept" not in page and "Are you sure" in page
    admin_client.post(admin_url("workspace", "delete", empty.pk), {"post": "yes"})
    assert not Workspace.objects.filter(pk=empty.pk).exists()


# export_audit -------------------------------------------------------------------------------


class Recorder(io.StringIO):
    """stdout that notes how many queries had run when each line was written."""

    def __init__(self, queries: CaptureQueriesContext) -> None:
        super().__init__()
        self.queries = queries
        self.at_line: list[int] = []

    def write(self, text: str) -> int:
        self.at_line.append(len(self.queries))
        return super().write(text)


def test_export_streams_json_lines_oldest_first_in_batches(workspace, other_workspace):
    events = write(workspace.pk, 25, user_group_id="acme")
    write(other_workspace.pk, 3)
    with CaptureQueriesContext(connection) as queries:
        out = Recorder(queries)
        call_command(
            "export_audit", "--workspace", workspace.slug, "--batch-size", "10", stdout=out
        )
    lines = out.getvalue().splitlines()
    assert [json.loads(line) for line in lines] == [audit.as_dict(e) for e in events]
    # The workspace, then one query per batch of 10 (25 events: 3 batches), each line
    # written as soon as its batch is read, not after everything is.
    assert len(queries) == 1 + 3
    assert out.at_line[0] == 2 and out.at_line[10] == 3 and out.at_line[20] == 4


def test_export_since(workspace):
    old = write(workspace.pk, 2)
    new = write(workspace.pk, 1)
    aged(old, 10)
    since = (timezone.now() - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S")
    out = io.StringIO()
    call_command("export_audit", "--workspace", workspace.slug, "--since", since, stdout=out)
    assert [json.loads(line)["id"] for line in out.getvalue().splitlines()] == [new[0].event_id]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--workspace", "nobody"], "No workspace has the slug"),
        (["--since", "last week"], "--since must be an ISO 8601 time"),
        (["--since", "2026-02-30T00:00:00"], "--since must be an ISO 8601 time"),
        (["--batch-size", "0"], "--batch-size must be at least 1"),
    ],
)
def test_export_refuses_bad_arguments(workspace, arguments, message):
    if arguments[0] != "--workspace":
        arguments = ["--workspace", workspace.slug, *arguments]
    with pytest.raises(CommandError, match=message):
        call_command("export_audit", *arguments, stdout=io.StringIO())


# prune_audit --------------------------------------------------------------------------------


def test_prune_deletes_older_events_in_batches(workspace, other_workspace):
    old = write(workspace.pk, 5) + write(other_workspace.pk, 2)
    aged(old, 400)
    kept = write(workspace.pk, 3)
    aged(kept[:1], 300)
    out = io.StringIO()
    call_command("prune_audit", "--batch-size", "2", stdout=out)
    assert set(AuditEvent.objects.values_list("pk", flat=True)) >= {e.pk for e in kept}
    assert not AuditEvent.objects.filter(pk__in=[e.pk for e in old]).exists()
    # 5 in batches of 2 (3 batches), 2 in one: 7 events in 4 batches.
    assert "Deleted 7 audit event(s) older than 365 day(s)" in out.getvalue()
    assert "in 4 batch(es)" in out.getvalue()


def test_prune_reads_the_retention_setting(workspace):
    aged(write(workspace.pk, 2), 40)
    with override_settings(USERGROUPS={"AUDIT_RETENTION_DAYS": 30}):
        out = io.StringIO()
        call_command("prune_audit", stdout=out)
    assert "Deleted 2 audit event(s) older than 30 day(s)" in out.getvalue()
    out = io.StringIO()
    call_command("prune_audit", stdout=out)
    assert "Deleted 0 audit event(s)" in out.getvalue()


def test_prune_refuses_a_batch_size_below_one(db):
    with pytest.raises(CommandError, match="at least 1"):
        call_command("prune_audit", "--batch-size", "0", stdout=io.StringIO())

"""The audit trail (CONTRACT section 8): the event model and its one writer."""

import pytest
from django.db import transaction

from usergroups import audit_context
from usergroups.models import AuditEvent, Workspace
from usergroups.services import audit


def test_record_writes_one_event_with_the_context(workspace: Workspace, django_assert_num_queries):
    actor = audit_context.api_key("ugk_abcd")
    with audit_context.acting(actor, request_id="req-1", ip="203.0.113.9"):
        # The event's INSERT, and the SELECT of the webhooks that may receive it.
        with transaction.atomic(), django_assert_num_queries(2):
            event = audit.record(
                workspace.pk, audit.USER_GROUP_CREATED, user_group_id="acme", details={"a": 1}
            )
    stored = AuditEvent.objects.get()
    assert stored.event_id == event.event_id
    assert stored.event_id.startswith("evt_")
    assert stored.actor == {"type": "api_key", "id": "ugk_abcd"}
    assert (stored.request_id, stored.ip, stored.user_group_id) == ("req-1", "203.0.113.9", "acme")
    assert stored.details == {"a": 1}


def test_record_refuses_an_unknown_action(workspace: Workspace):
    with pytest.raises(ValueError, match="Unknown audit action"):
        audit.record(workspace.pk, "user_group.renamed")
    assert not AuditEvent.objects.exists()


def test_outside_every_door_the_system_acts(workspace: Workspace):
    event = audit.record(workspace.pk, audit.API_KEY_CREATED)
    assert event.actor == {"type": "system", "id": "python"}
    assert event.request_id

"""The audit trail (CONTRACT section 8): one event per change, mint and revocation, from
every door (API, admin, commands), in the change's transaction, never with a secret; the
request id taken or made, echoed, stored and logged."""

import io
import logging
from datetime import timedelta

import jwt
import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.management import call_command
from django.db import IntegrityError, transaction

from tests.support.admin import admin_url, create_key, group_form
from tests.support.api import client_for, get_or_create, rotate, send
from tests.support.embed import mint, minted, revoke
from tests.support.factories import APIKeyFactory, UserGroupFactory
from tests.support.leaks import audit_event_leaks, find_leaks
from usergroups import audit_context, services
from usergroups.models import APIKey, AuditEvent, EndUser, UserGroup, Workspace
from usergroups.services import audit

END_USER_URL = "/api/user/end-user"


def events(*actions: str) -> list[AuditEvent]:
    """The events of ``actions`` (all if none), oldest first."""
    found = AuditEvent.objects.order_by("id")
    return list(found.filter(action__in=actions) if actions else found)


def only_event(action: str) -> AuditEvent:
    (event,) = events(action)
    return event


# The writer ---------------------------------------------------------------------------------


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
    assert event.request_id and event.ip is None


def test_an_address_that_is_not_one_is_left_out(workspace: Workspace):
    with audit_context.acting(audit_context.system("x"), ip="unix:/run/socket"):
        assert audit.record(workspace.pk, audit.API_KEY_CREATED).ip is None


def test_event_ids_sort_by_time(workspace: Workspace):
    first = audit.record(workspace.pk, audit.API_KEY_CREATED)
    later = audit.new_event_id(int((first.at + timedelta(microseconds=1)).timestamp() * 10**6))
    assert first.event_id.startswith("evt_") and len(first.event_id) == 34
    assert first.event_id[:18] < later[:18]
    assert audit.new_event_id(0) < first.event_id


def test_the_representation_is_the_contracts(workspace: Workspace):
    event = audit.record(workspace.pk, audit.END_USER_DELETED, end_user_id="ada")
    shown = audit.as_dict(event)
    assert set(shown) == {
        "id", "at", "action", "actor", "user_group_id", "end_user_id", "request_id", "ip",
        "details",
    }  # fmt: skip
    assert shown["at"].endswith("Z") and shown["id"] == event.event_id
    assert shown["end_user_id"] == "ada" and shown["user_group_id"] is None


# By the API: the actor is the key's prefix, with the request's id and address ------------------


def api_event(action: str, api_key: APIKey) -> AuditEvent:
    event = only_event(action)
    assert event.actor == {"type": "api_key", "id": api_key.prefix}
    assert event.ip == "127.0.0.1" and event.request_id
    assert event.workspace_id == api_key.workspace_id
    return event


def test_api_group_lifecycle_events(api_client, api_key):
    get_or_create(api_client, {"user_group_id": "root"})
    assert get_or_create(api_client, {"user_group_id": "acme"}).json()["new_user_group"]
    created = events(audit.USER_GROUP_CREATED)
    assert [e.user_group_id for e in created] == ["root", "acme"]
    assert all(e.actor == {"type": "api_key", "id": api_key.prefix} for e in created)
    get_or_create(api_client, {"user_group_id": "acme"})  # found: no event
    assert len(events(audit.USER_GROUP_CREATED)) == 2

    update = {"user_group_id": "acme", "name": "Acme", "new_user_group_id": "acme-2"}
    assert send(api_client, "PUT", update).status_code == 200
    updated = api_event(audit.USER_GROUP_UPDATED, api_key)
    assert updated.user_group_id == "acme-2"
    assert updated.details["fields"] == ["name", "user_group_id"]
    assert updated.details["previous_user_group_id"] == "acme"

    move = {"user_group_id": "acme-2", "parent_user_group_id": "root"}
    assert send(api_client, "PUT", move).status_code == 200
    moved = api_event(audit.USER_GROUP_MOVED, api_key)
    assert moved.details["from_parent_user_group_id"] is None
    assert moved.details["to_parent_user_group_id"] == "root"
    assert len(events(audit.USER_GROUP_UPDATED)) == 1  # a move alone is no update

    token = get_or_create(api_client, {"user_group_id": "acme-2"}).json()["user_group"]["token"]
    assert rotate(api_client, {"current_token": token}).status_code == 200
    rotated = api_event(audit.USER_GROUP_TOKEN_ROTATED, api_key)
    assert rotated.user_group_id == "acme-2"
    assert find_leaks(str(audit.as_dict(rotated)), {"old token": token}) == []

    deleted = send(api_client, "DELETE", {"user_group_id": "root", "cascade": True})
    assert deleted.json()["deleted_count"] == 2
    gone = events(audit.USER_GROUP_DELETED)
    assert [(e.user_group_id, e.details.get("cascade_of")) for e in gone] == [
        ("root", None),
        ("acme-2", "root"),
    ]
    assert all(e.actor["id"] == api_key.prefix for e in gone)


def test_api_embed_events_name_the_token_by_its_jti(api_client, api_key, group):
    token = minted(api_client, group.provided_id)
    minted_event = api_event(audit.EMBED_TOKEN_MINTED, api_key)
    claims = jwt.decode(token, options={"verify_signature": False})
    assert minted_event.details["jti"] == claims["jti"]
    assert minted_event.user_group_id == group.provided_id
    assert token not in str(audit.as_dict(minted_event))
    assert revoke(api_client, {"user_group_id": group.provided_id}).status_code == 200
    revoked = api_event(audit.EMBED_TOKEN_REVOKED, api_key)
    assert revoked.details == {
        "axis": "user_group",
        "team_id": group.team_id,
        "subtree": False,
        "groups": 1,
    }


def test_a_refused_mint_writes_nothing(api_client, group):
    before = events()
    assert mint(api_client, {"user_group_id": "nobody"}).status_code == 404
    assert (
        mint(api_client, {"user_group_id": group.provided_id, "expires_in": 1}).status_code == 400
    )
    assert events() == before


def test_api_end_user_events(api_client, api_key):
    put = {"end_user_id": "ada", "display_name": "Ada"}
    assert send(api_client, "PUT", put, path=END_USER_URL).status_code == 200
    created = api_event(audit.END_USER_CREATED, api_key)
    assert created.end_user_id == "ada" and created.details["fields"] == ["display_name"]
    send(api_client, "PUT", put, path=END_USER_URL)  # nothing differs: no event
    disable = {"end_user_id": "ada", "disabled": True}
    assert send(api_client, "PUT", disable, path=END_USER_URL).status_code == 200
    updated = api_event(audit.END_USER_UPDATED, api_key)
    assert updated.details == {"fields": ["disabled"], "disabled": True, "tokens_revoked": True}
    assert send(api_client, "DELETE", {"end_user_id": "ada"}, path=END_USER_URL).status_code == 200
    assert api_event(audit.END_USER_DELETED, api_key).end_user_id == "ada"


def test_a_refused_request_writes_no_event(api_client, group):
    assert get_or_create(api_client, {"user_group_id": ""}).status_code == 400
    assert rotate(api_client, {"current_token": group.token + "x"}).status_code == 404
    assert send(api_client, "DELETE", {"user_group_id": "nobody"}).status_code == 404
    reader = client_for(APIKeyFactory.create(workspace=group.workspace, scope_write=False).key)
    AuditEvent.objects.all().delete()
    assert get_or_create(reader, {"user_group_id": "new"}).status_code == 403
    assert events() == []


# By the admin: the actor is the staff user -----------------------------------------------------


def staff_event(action: str) -> AuditEvent:
    event = only_event(action)
    assert event.actor == {"type": "staff", "id": "admin"}
    assert event.ip == "127.0.0.1" and event.request_id
    return event


def test_admin_group_events(admin_client, workspace):
    add = group_form(provided_id="root", workspace=workspace)
    assert admin_client.post(admin_url("usergroup", "add"), add).status_code == 302
    assert staff_event(audit.USER_GROUP_CREATED).user_group_id == "root"
    child = UserGroupFactory(workspace=workspace, provided_id="child")
    change = {**group_form(provided_id="child", name="Renamed"), "parent": ""}
    assert admin_client.post(admin_url("usergroup", "change", child.pk), change).status_code == 302
    assert "name" in staff_event(audit.USER_GROUP_UPDATED).details["fields"]
    root = UserGroup.objects.get(provided_id="root")
    moving = {**group_form(provided_id="child", name="Renamed"), "parent": str(root.pk)}
    assert admin_client.post(admin_url("usergroup", "change", child.pk), moving).status_code == 302
    assert staff_event(audit.USER_GROUP_MOVED).details["to_parent_user_group_id"] == "root"
    assert admin_client.post(admin_url("usergroup", "rotate_token", child.pk)).status_code == 302
    assert staff_event(audit.USER_GROUP_TOKEN_ROTATED).user_group_id == "child"
    url = admin_url("usergroup", "revoke_embed_tokens", child.pk)
    assert admin_client.post(url).status_code == 302
    assert staff_event(audit.EMBED_TOKEN_REVOKED).details["axis"] == "user_group"
    assert admin_client.post(admin_url("usergroup", "delete", child.pk), {"post": "yes"})
    assert staff_event(audit.USER_GROUP_DELETED).user_group_id == "child"


def test_admin_end_user_events(admin_client, workspace):
    data = {"workspace": str(workspace.pk), "end_user_id": "ada", "display_name": "Ada"}
    data.update(attributes="", disabled="")
    assert admin_client.post(admin_url("enduser", "add"), data).status_code == 302
    assert staff_event(audit.END_USER_CREATED).end_user_id == "ada"
    ada = EndUser.objects.get()
    change = {"display_name": "Ada L", "attributes": "", "disabled": "on"}
    assert admin_client.post(admin_url("enduser", "change", ada.pk), change).status_code == 302
    assert staff_event(audit.END_USER_UPDATED).details["disabled"] is True
    assert admin_client.post(admin_url("enduser", "revoke_tokens", ada.pk)).status_code == 302
    revoked = staff_event(audit.EMBED_TOKEN_REVOKED)
    assert (revoked.details, revoked.end_user_id) == ({"axis": "end_user"}, "ada")
    assert admin_client.post(admin_url("enduser", "delete", ada.pk), {"post": "yes"})
    assert staff_event(audit.END_USER_DELETED).end_user_id == "ada"


def test_admin_api_key_events(admin_client, workspace):
    page = create_key(admin_client, workspace, scopes=["read", "write", "embed"])
    assert page.status_code == 200
    created = staff_event(audit.API_KEY_CREATED)
    row = APIKey.objects.get()
    assert created.details["prefix"] == row.prefix
    assert created.details["scopes"] == ["embed", "read", "write"]
    change = {"name": row.name, "expires_at_0": "", "expires_at_1": "", "scopes": ["read"]}
    assert admin_client.post(admin_url("apikey", "change", row.pk), change).status_code == 302
    narrowed = staff_event(audit.API_KEY_SCOPES_CHANGED)
    assert narrowed.details == {
        "prefix": row.prefix, "removed": ["write", "embed"], "scopes": ["read"]
    }  # fmt: skip
    rotation = {"action": "rotate_keys", ACTION_CHECKBOX_NAME: [row.pk], "post": "yes"}
    rotation["grace_hours"] = "0"
    assert admin_client.post(admin_url("apikey", "changelist"), rotation).status_code == 302
    rotated = staff_event(audit.API_KEY_ROTATED)
    assert rotated.details["prefix"] == row.prefix
    new = APIKey.objects.exclude(pk=row.pk).get()
    assert rotated.details["new_prefix"] == new.prefix
    assert events(audit.API_KEY_REVOKED) == []  # a rotation is one event
    assert admin_client.post(admin_url("apikey", "revoke", new.pk)).status_code == 302
    assert staff_event(audit.API_KEY_REVOKED).details == {"prefix": new.prefix}


# By a command: the actor is the command -----------------------------------------------------


def test_command_api_key_events(db):
    out = io.StringIO()
    call_command("create_api_key", "--workspace", "cmd", stdout=out, stderr=io.StringIO())
    key = out.getvalue().strip()
    created = only_event(audit.API_KEY_CREATED)
    assert created.actor == {"type": "system", "id": "create_api_key"}
    assert created.details["prefix"] == key[:12] and key not in str(audit.as_dict(created))
    out = io.StringIO()
    call_command("rotate_api_key", key[:12], "--grace-hours", "1", stdout=out, stderr=io.StringIO())
    rotated = only_event(audit.API_KEY_ROTATED)
    assert rotated.actor == {"type": "system", "id": "rotate_api_key"}
    new_key = out.getvalue().strip()
    call_command("revoke_api_key", new_key[:12], stdout=io.StringIO())
    revoked = only_event(audit.API_KEY_REVOKED)
    assert revoked.actor == {"type": "system", "id": "revoke_api_key"}
    assert revoked.details == {"prefix": new_key[:12]}
    leaks = find_leaks(str([audit.as_dict(e) for e in events()]), {"a": key, "b": new_key})
    assert leaks == []


# Transactions: the event commits with its change, or neither does ----------------------------


def test_a_rolled_back_change_leaves_no_event(workspace):
    with pytest.raises(RuntimeError), transaction.atomic():
        services.groups.create_group(workspace.pk, "acme", "Acme", {}, None)
        assert only_event(audit.USER_GROUP_CREATED)
        raise RuntimeError("the host's transaction fails after the change")
    assert not UserGroup.objects.exists() and events() == []


@pytest.fixture
def failing_event_insert(workspace, monkeypatch):
    """The next event's INSERT fails in the database (its public id is taken)."""
    taken = audit.record(workspace.pk, audit.API_KEY_CREATED).event_id
    monkeypatch.setattr(audit, "new_event_id", lambda _at: taken)
    return taken


def test_a_failed_event_write_undoes_the_change(workspace, failing_event_insert):
    with pytest.raises(IntegrityError):
        services.groups.create_group(workspace.pk, "acme", "Acme", {"s": "d"}, None)
    assert not UserGroup.objects.exists()
    assert len(events()) == 1


def test_a_failed_event_write_undoes_a_rotation(group, monkeypatch):
    taken = audit.record(group.workspace_id, audit.API_KEY_CREATED).event_id
    monkeypatch.setattr(audit, "new_event_id", lambda _at: taken)
    with pytest.raises(IntegrityError), transaction.atomic():
        services.groups.rotate_group_token(group)
    stored = UserGroup.objects.get(pk=group.pk)
    assert (stored.token_digest, stored.embed_generation) == (group.token_digest, 0)


def test_a_failed_event_write_undoes_a_deletion(group, failing_event_insert):
    workspace = group.workspace
    with pytest.raises(IntegrityError), transaction.atomic():
        services.groups.delete_group(workspace.pk, provided_id=group.provided_id)
    assert UserGroup.objects.filter(pk=group.pk).exists()


def test_a_failed_event_write_undoes_an_end_users_change(workspace, failing_event_insert):
    with pytest.raises(IntegrityError), transaction.atomic():
        services.end_users.put_end_user(workspace.pk, "ada", {})
    assert not EndUser.objects.exists()


def test_a_failed_event_write_undoes_a_revocation(api_key, failing_event_insert):
    with pytest.raises(IntegrityError), transaction.atomic():
        services.keys.revoke_key(api_key)
    assert APIKey.objects.get(pk=api_key.pk).revoked_at is None


# X-Request-ID ---------------------------------------------------------------------------------


def test_a_valid_request_id_is_echoed_and_stored(api_client):
    given = "req-" + "A~ !" * 49  # 200 printable ASCII characters
    response = get_or_create(api_client, {"user_group_id": "acme"}, HTTP_X_REQUEST_ID=given)
    assert response["X-Request-ID"] == given
    assert only_event(audit.USER_GROUP_CREATED).request_id == given


@pytest.mark.parametrize("given", ["", "x" * 201, "tab\there", "caf\u00e9", "del\x7f"], ids=repr)
def test_an_invalid_request_id_is_replaced(api_client, given):
    response = get_or_create(api_client, {"user_group_id": "acme"}, HTTP_X_REQUEST_ID=given)
    made = response["X-Request-ID"]
    assert made != given and audit_context.valid_request_id(made) and len(made) == 32
    assert only_event(audit.USER_GROUP_CREATED).request_id == made


def test_every_answer_carries_a_request_id(api_client, anon_api_client):
    answers = [
        get_or_create(anon_api_client, {"user_group_id": "acme"}),  # 401
        get_or_create(api_client, b"not json"),  # 400
        rotate(api_client, {"current_token": "ugt_" + "A" * 43}),  # 404
        send(api_client, "PATCH", {}),  # 405
        api_client.get("/api/user/audit"),  # 200
        api_client.get("/api/user/embed-token/jwks"),
    ]
    ids = [answer["X-Request-ID"] for answer in answers]
    assert all(audit_context.valid_request_id(made) for made in ids)
    assert len(set(ids)) == len(ids)


def test_log_records_carry_the_request_id(api_client, api_key, caplog):
    with caplog.at_level(logging.INFO, logger="usergroups"):
        get_or_create(api_client, {"user_group_id": "acme"}, HTTP_X_REQUEST_ID="trace-42")
        logged = [r for r in caplog.records if r.name == "usergroups.services.groups"]
        assert logged and all(r.request_id == "trace-42" for r in logged)
        caplog.clear()
        services.groups.create_group(api_key.workspace_id, "outside", "x", {}, None)
    outside = [r for r in caplog.records if r.name == "usergroups.services.groups"]
    assert [r.request_id for r in outside] == ["-"]


def test_the_suite_wide_scan_sees_a_secret_in_an_event(workspace, api_key):
    """tests/conftest.py scans every event after every test that used the database: it
    would see an event holding a key (none of the app's doors writes one)."""
    event = audit.record(workspace.pk, audit.USER_GROUP_UPDATED, details={"note": api_key.key})
    assert [leak.split(":")[0] for leak in audit_event_leaks()] == [audit.USER_GROUP_UPDATED]
    event.delete()  # what the scan after this test reads: nothing

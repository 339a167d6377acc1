"""``GET /api/user/audit`` (CONTRACT section 8): filters, keyset pages stable under
concurrent writes, tenancy, bad inputs, and its cost."""

import base64
import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.support.api import assert_error, client_for
from tests.support.factories import APIKeyFactory
from usergroups import audit_context
from usergroups.api.audit_serializers import encode_cursor
from usergroups.models import AuditEvent
from usergroups.services import audit
from usergroups.services.audit import Position

AUDIT_URL = "/api/user/audit"
EVENT_KEYS = {
    "id", "at", "action", "actor", "user_group_id", "end_user_id", "request_id", "ip", "details",
}  # fmt: skip


def listed(client, **params):
    response = client.get(AUDIT_URL, params)
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"success", "events", "next_cursor"} and body["success"] == 1
    return body


def write(workspace_id, count, action=audit.USER_GROUP_CREATED, **fields):
    with audit_context.acting(audit_context.system("test")):
        return [audit.record(workspace_id, action, **fields) for _ in range(count)]


@pytest.fixture
def mixed(workspace):
    """Events of several actions, groups and end users, in a known order."""
    write(workspace.pk, 1, audit.USER_GROUP_CREATED, user_group_id="acme")
    write(workspace.pk, 1, audit.USER_GROUP_UPDATED, user_group_id="acme")
    write(workspace.pk, 1, audit.EMBED_TOKEN_MINTED, user_group_id="acme", end_user_id="ada")
    write(workspace.pk, 1, audit.EMBED_TOKEN_MINTED, user_group_id="beta")
    write(workspace.pk, 1, audit.END_USER_CREATED, end_user_id="ada")
    return workspace


def test_newest_first_with_every_field(api_client, api_key, mixed):
    body = listed(api_client)
    shown = body["events"]
    stored = list(AuditEvent.objects.filter(workspace=mixed).order_by("-id"))
    assert [e["id"] for e in shown] == [e.event_id for e in stored]
    assert all(set(e) == EVENT_KEYS for e in shown)
    assert shown[-1]["action"] == "api_key.created"  # the fixture's key, by its prefix
    assert shown[-1]["details"]["prefix"] == api_key.prefix
    assert shown[0]["actor"] == {"type": "system", "id": "test"}
    assert body["next_cursor"] is None


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"action": "user_group"}, ["user_group.updated", "user_group.created"]),
        ({"action": "user_group.created"}, ["user_group.created"]),
        ({"action": "user_group.cre"}, []),  # a prefix stops at a dot
        ({"action": "embed_token"}, ["embed_token.minted", "embed_token.minted"]),
        ({"action": "webhook"}, []),
        ({"action": "nothing_like_it"}, []),
        ({"user_group_id": "acme"}, ["embed_token.minted", "user_group.updated", "user_group.created"]),
        ({"user_group_id": "ACME"}, []),
        ({"end_user_id": "ada"}, ["end_user.created", "embed_token.minted"]),
        ({"end_user_id": "ada", "action": "end_user"}, ["end_user.created"]),
        ({"user_group_id": "beta", "end_user_id": "ada"}, []),
    ],
)  # fmt: skip
def test_filters(api_client, mixed, params, expected):
    assert [e["action"] for e in listed(api_client, **params)["events"]] == expected


def test_since_is_inclusive_and_until_exclusive(api_client, workspace):
    now = timezone.now()
    old, middle, new = write(workspace.pk, 3)
    for event, age in ((old, 3), (middle, 2), (new, 1)):
        AuditEvent.objects.filter(pk=event.pk).update(at=now - timedelta(hours=age))
    since = (now - timedelta(hours=2)).isoformat()
    until = (now - timedelta(hours=1)).isoformat()
    ids = [e["id"] for e in listed(api_client, since=since, until=until)["events"]]
    assert ids == [middle.event_id]
    # middle, new and the fixture key's event (written now)
    assert len(listed(api_client, since=since)["events"]) == 3
    z_form = (now - timedelta(hours=2, minutes=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert [e["id"] for e in listed(api_client, until=z_form)["events"]] == [old.event_id]


def test_pages_follow_the_cursor_without_gap_or_repeat(api_client, workspace):
    write(workspace.pk, 11)
    everything = [
        e.event_id for e in AuditEvent.objects.filter(workspace=workspace).order_by("-id")
    ]
    seen, cursor, pages = [], None, 0
    while True:
        body = listed(api_client, limit=4, **({"cursor": cursor} if cursor else {}))
        seen += [e["id"] for e in body["events"]]
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == everything and pages == 3  # 12 events (11 and the key's): 4 + 4 + 4


def test_the_default_limit_is_50_and_200_is_the_most(api_client, workspace):
    write(workspace.pk, 210)
    assert len(listed(api_client)["events"]) == 50
    assert len(listed(api_client, limit=200)["events"]) == 200
    assert len(listed(api_client, limit=1)["events"]) == 1


def test_a_filtered_list_pages_within_its_filter(api_client, workspace):
    write(workspace.pk, 3, user_group_id="a")
    write(workspace.pk, 3, user_group_id="b")
    first = listed(api_client, user_group_id="a", limit=2)
    second = listed(api_client, user_group_id="a", limit=2, cursor=first["next_cursor"])
    assert [e["user_group_id"] for e in first["events"] + second["events"]] == ["a"] * 3
    assert second["next_cursor"] is None


def test_a_workspace_sees_its_own_events_only(
    api_client, other_api_client, workspace, other_workspace
):
    write(workspace.pk, 3, user_group_id="shared-id")
    write(other_workspace.pk, 2, user_group_id="shared-id")
    mine = listed(api_client, user_group_id="shared-id")["events"]
    theirs = listed(other_api_client, user_group_id="shared-id")["events"]
    assert len(mine) == 3 and len(theirs) == 2
    assert not {e["id"] for e in mine} & {e["id"] for e in theirs}
    # Another workspace's cursor is no cursor here.
    cursor = listed(api_client, user_group_id="shared-id", limit=1)["next_cursor"]
    response = other_api_client.get(AUDIT_URL, {"cursor": cursor, "user_group_id": "shared-id"})
    assert_error(response, 400, "invalid", ["cursor"])


def decoded(cursor: str) -> bytes:
    return base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))


def holds_row_id(cursor: str, row_id: int) -> bool:
    """Whether the cursor shows the row id in any plain form: as text, or as bytes."""
    raw = decoded(cursor)
    return str(row_id).encode() in raw or any(
        row_id.to_bytes(width, order) in raw for width in (4, 8) for order in ("big", "little")
    )


@pytest.mark.parametrize("window", [{}, {"since": "2020-01-01T00:00:00Z"}])
def test_the_cursor_shows_nothing_of_other_workspaces_events(
    api_client, workspace, other_workspace, window
):
    """Issue 27, item 5: a cursor held the global row id, so between two reads of one
    workspace it moved by the events other workspaces wrote. Now it shows no row id,
    cannot be made or changed by a client, and has one length whatever the id."""
    # Row ids of three digits or more: that one turns up by chance in a cursor's random
    # looking bytes is a two-in-a-million chance.
    write(other_workspace.pk, 100)
    write(workspace.pk, 2)
    first = listed(api_client, limit=1, **window)["next_cursor"]
    write(other_workspace.pk, 5)
    write(workspace.pk, 1)
    second = listed(api_client, limit=1, **window)["next_cursor"]

    ids = (
        AuditEvent.objects.filter(workspace=workspace).order_by("-id").values_list("pk", flat=True)
    )
    newest, before = ids[0], ids[1]
    assert not holds_row_id(first, before) and not holds_row_id(second, newest)
    assert len(first) == len(second) == len(encode_cursor(Position(2**62), workspace.pk))
    # Every character counts: a changed cursor is refused, never read as another position.
    for at in range(len(second)):
        changed = second[:at] + ("A" if second[at] != "A" else "B") + second[at + 1 :]
        response = api_client.get(AUDIT_URL, {"cursor": changed, "limit": 1, **window})
        assert_error(response, 400, "invalid", ["cursor"])
    # And the cursors still page: each continues below its own event.
    assert listed(api_client, cursor=second, limit=1, **window)["events"][0]["id"] == (
        AuditEvent.objects.get(pk=before).event_id
    )


def test_read_scope_is_needed(workspace):
    no_read = client_for(APIKeyFactory.create(workspace=workspace, scope_read=False).key)
    assert_error(no_read.get(AUDIT_URL), 403, "permission_denied")
    only_read = {f"scope_{s}": s == "read" for s in ("read", "write", "rotate", "embed")}
    reader = client_for(APIKeyFactory.create(workspace=workspace, **only_read).key)
    assert reader.get(AUDIT_URL).status_code == 200


def test_no_key_is_401(anon_api_client, db):
    assert_error(anon_api_client.get(AUDIT_URL), 401, "not_authenticated")


def test_other_methods_are_405(api_client):
    for method in ("post", "put", "delete", "patch"):
        response = getattr(api_client, method)(AUDIT_URL, {}, format="json")
        assert_error(response, 405, "method_not_allowed")


def b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("limit", "0"),
        ("limit", "201"),
        ("limit", "ten"),
        ("limit", "1.5"),
        ("cursor", "!!!"),
        ("cursor", "not-a-cursor"),
        ("cursor", b64("a1:5")),  # the form of 0.3's cursors, refused since 0.4
        ("cursor", b64("t1:1700000000000000:5")),
        ("cursor", b64("a1:-1")),
        ("cursor", b64("a1:0")),
        ("cursor", b64("a2:10")),
        ("cursor", b64("a1:99999999999999999999")),
        ("cursor", "A" * 65),
        ("cursor", b64("t1:1:1")),  # a time window's cursor, without the window
        ("cursor", b64("t1:999999999999999999:5")),
        ("cursor", b64("t1:5")),
        ("action", "User_group"),
        ("action", "user_group."),
        ("action", ".created"),
        ("action", "user group"),
        ("action", "a" * 65),
        ("since", "yesterday"),
        ("since", "2026-13-01T00:00:00Z"),
        ("until", "2026-01-01T25:00:00Z"),
        ("user_group_id", "x" * 256),
        ("user_group_id", "nul\x00"),
        ("end_user_id", "x" * 256),
    ],
)
def test_bad_inputs_are_400_naming_the_field(api_client, field, value):
    assert_error(api_client.get(AUDIT_URL, {field: value}), 400, "invalid", [field])


def test_a_cursor_of_the_list_is_refused_with_a_time_window(api_client, workspace):
    write(workspace.pk, 3)
    cursor = listed(api_client, limit=1)["next_cursor"]
    response = api_client.get(AUDIT_URL, {"cursor": cursor, "since": "2020-01-01T00:00:00Z"})
    assert_error(response, 400, "invalid", ["cursor"])
    timed = listed(api_client, limit=1, since="2020-01-01T00:00:00Z")["next_cursor"]
    assert_error(api_client.get(AUDIT_URL, {"cursor": timed}), 400, "invalid", ["cursor"])


def test_a_time_window_pages_by_time_without_gap_or_repeat(api_client, workspace):
    now = timezone.now()
    events = write(workspace.pk, 9)
    # Times out of insertion order, two of them equal: the pages follow (at, id).
    for event, minutes in zip(events, [5, 1, 3, 3, 9, 2, 3, 7, 4], strict=True):
        AuditEvent.objects.filter(pk=event.pk).update(at=now - timedelta(minutes=minutes))
    window = {
        "since": (now - timedelta(minutes=8)).isoformat(),
        "until": (now - timedelta(seconds=30)).isoformat(),  # not the fixture key's event
    }
    expected = [
        e.event_id
        for e in AuditEvent.objects.filter(pk__in=[e.pk for e in events]).order_by("-at", "-id")
        if e.at >= now - timedelta(minutes=8)
    ]
    seen, cursor = [], None
    while True:
        body = listed(api_client, limit=2, **window, **({"cursor": cursor} if cursor else {}))
        seen += [e["id"] for e in body["events"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == expected and len(expected) == 8


def test_until_before_since_is_400_naming_until(api_client):
    response = api_client.get(
        AUDIT_URL, {"since": "2026-02-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"}
    )
    assert_error(response, 400, "invalid", ["until"])


def test_a_query_that_is_not_utf8_is_400(api_client):
    response = api_client.get(AUDIT_URL + "?user_group_id=caf%E9")
    assert_error(response, 400, "invalid", ["user_group_id"])


def test_a_page_costs_the_key_and_one_query(
    api_client, recently_used_key, workspace, django_assert_num_queries
):
    write(workspace.pk, 60)
    with django_assert_num_queries(2):
        body = listed(api_client, action="user_group", limit=20)
    assert len(body["events"]) == 20 and body["next_cursor"]
    with django_assert_num_queries(2):
        listed(api_client, cursor=body["next_cursor"], action="user_group", limit=20)
    window = {"since": "2020-01-01T00:00:00Z", "until": "2100-01-01T00:00:00Z"}
    with django_assert_num_queries(2):
        body = listed(api_client, limit=20, **window)
    with django_assert_num_queries(2):
        listed(api_client, cursor=body["next_cursor"], limit=20, **window)


@pytest.mark.django_db(transaction=True)
def test_paging_while_events_are_written_skips_and_repeats_nothing(workspace):
    """A writer thread adds events (each in its own transaction) the whole time a client
    pages through: every event there at the start is seen exactly once, in order; events
    written meanwhile appear only on the first page, if at all."""
    api = client_for(APIKeyFactory.create(workspace=workspace).key)
    write(workspace.pk, 90)
    before = list(
        AuditEvent.objects.filter(workspace=workspace).order_by("-id").values_list("id", "event_id")
    )
    done = threading.Event()
    written = []

    def writer():
        try:
            while not done.is_set():
                written.append(write(workspace.pk, 1, user_group_id="meanwhile")[0].pk)
        finally:
            from django.db import connections

            connections.close_all()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        seen, cursor = [], None
        while True:
            params = {"limit": 7, **({"cursor": cursor} if cursor else {})}
            body = listed(api, **params)
            seen += [e["id"] for e in body["events"]]
            cursor = body["next_cursor"]
            if cursor is None:
                break
    finally:
        done.set()
        thread.join(60)
    assert not thread.is_alive() and len(written) > 0
    assert len(seen) == len(set(seen))  # nothing repeated
    old_ids = [event_id for _pk, event_id in before]
    assert [event_id for event_id in seen if event_id in set(old_ids)] == old_ids  # none skipped
    newer = [event_id for event_id in seen if event_id not in set(old_ids)]
    assert seen[: len(newer)] == newer  # written meanwhile: only ahead of the old ones

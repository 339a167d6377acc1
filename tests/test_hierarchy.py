"""The group hierarchy through the API (contract section 5): parents on create and PUT,
the rules a parent must keep, computed properties and mapping, cascade delete, the list
filter, the embed side, signals and query budgets."""

import pytest
from django.test import override_settings

from tests.support.api import (
    assert_error,
    client_for,
    get_or_create,
    rotate,
    send,
    status_and_body,
)
from tests.support.concurrency import run_together
from tests.support.db_state import database_unchanged
from tests.support.factories import SchemaMappingFactory, UserGroupFactory
from usergroups.auth.group_token import resolve_group_token
from usergroups.contrib.variables import data_source_for, group_variables
from usergroups.models import UserGroup
from usergroups.signals import group_deleted, group_moved


def put(client, body):
    return send(client, "PUT", body)


def delete(client, body):
    return send(client, "DELETE", body)


def group_of(response) -> dict:
    status, body = status_and_body(response)
    assert status == 200, body
    return body["user_group"]


def make(client, user_group_id, parent=None, **fields) -> dict:
    """A new group made through the API, under ``parent`` when given."""
    body = {"user_group_id": user_group_id, **fields}
    if parent is not None:
        body["parent_user_group_id"] = parent
    response = get_or_create(client, body)
    assert response.json()["new_user_group"] is True, response.content
    return group_of(response)


def chain(client, depth, prefix="level") -> list[dict]:
    """``depth`` groups, each the child of the one before: level-1 ... level-N."""
    made = [make(client, f"{prefix}-1")]
    for level in range(2, depth + 1):
        made.append(make(client, f"{prefix}-{level}", parent=made[-1]["provided_id"]))
    return made


def parent_of(provided_id) -> str | None:
    parent = UserGroup.objects.get(provided_id=provided_id).parent
    return None if parent is None else parent.provided_id


# --- create with a parent, computed values -------------------------------------------


def test_a_child_inherits_properties_and_mapping_merged_from_the_root_down(api_client):
    make(
        api_client,
        "league",
        properties={"region": "EU", "sport": "football", "limits": {"rows": 10}},
        mapping={"sales": "league-db", "hr": "league-hr"},
    )
    make(api_client, "division", parent="league", properties=None, mapping={})
    team = make(
        api_client,
        "team",
        parent="division",
        properties={"region": "FR", "limits": {"cols": 3}},
        mapping={"sales": "team-db"},
    )
    assert team["parent_user_group_id"] == "division"
    assert team["properties"] == {"region": "FR", "limits": {"cols": 3}}
    assert team["mapping"] == {"sales": "team-db"}
    # A top-level key of the deeper group replaces the ancestor's, whole (no deep merge);
    # the division's null properties add nothing.
    assert team["computed_properties"] == {
        "region": "FR",
        "sport": "football",
        "limits": {"cols": 3},
    }
    assert team["computed_mapping"] == {"hr": "league-hr", "sales": "team-db"}
    # The same at the next read, and from a GET of the existing group.
    again = group_of(get_or_create(api_client, {"user_group_id": "team"}))
    assert again == team


def test_a_group_without_parent_computes_its_own_values(api_client):
    root = make(api_client, "root", properties={"a": 1}, mapping={"s": "d"})
    assert root["parent_user_group_id"] is None
    assert root["computed_properties"] == {"a": 1}
    assert root["computed_mapping"] == {"s": "d"}
    bare = make(api_client, "bare")
    assert bare["properties"] is None and bare["computed_properties"] == {}


def test_get_of_an_existing_group_ignores_the_parent(api_client):
    make(api_client, "a")
    make(api_client, "b")
    with database_unchanged():
        response = get_or_create(api_client, {"user_group_id": "b", "parent_user_group_id": "a"})
    assert response.json()["new_user_group"] is False
    assert group_of(response)["parent_user_group_id"] is None
    # Even an unknown parent: the group exists, nothing is created or checked.
    response = get_or_create(api_client, {"user_group_id": "b", "parent_user_group_id": "nobody"})
    assert group_of(response)["parent_user_group_id"] is None


def test_parent_from_the_query_string(api_client):
    make(api_client, "a")
    response = api_client.get("/api/user?user_group_id=b&parent_user_group_id=a")
    assert group_of(response)["parent_user_group_id"] == "a"


def test_an_ancestors_change_shows_in_every_descendant_at_the_next_read(api_client):
    groups = chain(api_client, 4)
    put(api_client, {"user_group_id": "level-1", "properties": {"tier": "gold"}})
    put(api_client, {"user_group_id": "level-2", "mapping": {"sales": "eu-db"}})
    for group in groups[1:]:
        got = group_of(get_or_create(api_client, {"user_group_id": group["provided_id"]}))
        assert got["computed_properties"] == {"tier": "gold"}
        assert got["computed_mapping"] == {"sales": "eu-db"}
    level_1 = group_of(get_or_create(api_client, {"user_group_id": "level-1"}))
    assert level_1["computed_mapping"] == {}


def test_rotation_answers_are_unchanged(
    api_client, recently_used_key, django_assert_max_num_queries
):
    make(api_client, "parent")
    child = make(api_client, "child", parent="parent")
    # The key, the group with its parent, the swap, its audit event, the webhooks that
    # may receive it.
    with django_assert_max_num_queries(5):
        rotated = group_of(rotate(api_client, {"current_token": child["token"]}))
    assert set(rotated) == {"team_id", "token", "name", "provided_id"}


# --- refused parents --------------------------------------------------------------------


UNKNOWN_PARENT = "No user group of this workspace has the id parent_user_group_id names."


@pytest.mark.parametrize("parent", ["nobody", "A"])
def test_create_under_an_unknown_parent_is_404_and_creates_nothing(api_client, parent):
    """Like any group named that does not exist (issue 33: a schema cannot say which ids
    exist, and a 400 told a fuzzer that valid data was refused)."""
    make(api_client, "a")
    with database_unchanged():
        response = get_or_create(api_client, {"user_group_id": "b", "parent_user_group_id": parent})
    error = assert_error(response, 404, "not_found")
    assert error["message"] == UNKNOWN_PARENT


def test_an_empty_parent_is_invalid(api_client):
    with database_unchanged():
        response = get_or_create(api_client, {"user_group_id": "b", "parent_user_group_id": ""})
    assert_error(response, 400, "invalid", fields=["parent_user_group_id"])


def test_a_parent_of_another_workspace_is_unknown(api_client, other_workspace):
    UserGroupFactory(workspace=other_workspace, provided_id="theirs")
    with database_unchanged():
        response = get_or_create(
            api_client, {"user_group_id": "mine", "parent_user_group_id": "theirs"}
        )
    assert assert_error(response, 404, "not_found")["message"] == UNKNOWN_PARENT


def test_create_deeper_than_the_bound_is_a_conflict(api_client):
    """A well-formed request that the hierarchy as stored refuses: 409 (issue 33)."""
    chain(api_client, 5)
    with database_unchanged():
        response = get_or_create(
            api_client, {"user_group_id": "level-6", "parent_user_group_id": "level-5"}
        )
    error = assert_error(response, 409, "conflict")
    assert error["message"] == "The hierarchy would be 6 levels deep; at most 5 are allowed."


@override_settings(USERGROUPS={"MAX_HIERARCHY_DEPTH": 2})
def test_the_bound_is_a_setting(api_client):
    chain(api_client, 2)
    response = get_or_create(api_client, {"user_group_id": "c", "parent_user_group_id": "level-2"})
    assert_error(response, 409, "conflict")
    with override_settings(USERGROUPS={"MAX_HIERARCHY_DEPTH": 3}):
        assert make(api_client, "c", parent="level-2")["parent_user_group_id"] == "level-2"


@pytest.mark.parametrize("parent", [12, True, {"id": "a"}, ["a"], "x" * 256, "nul\x00"])
def test_a_parent_of_the_wrong_type_is_invalid(api_client, parent):
    with database_unchanged():
        response = get_or_create(api_client, {"user_group_id": "b", "parent_user_group_id": parent})
    assert_error(response, 400, "invalid", fields=["parent_user_group_id"])


# --- moves --------------------------------------------------------------------------------


def test_put_moves_a_group_with_its_subtree(api_client):
    make(api_client, "old-parent", properties={"from": "old"})
    make(api_client, "new-parent", properties={"from": "new"})
    make(api_client, "moved", parent="old-parent")
    make(api_client, "below", parent="moved")
    moved = group_of(
        put(api_client, {"user_group_id": "moved", "parent_user_group_id": "new-parent"})
    )
    assert moved["parent_user_group_id"] == "new-parent"
    assert moved["computed_properties"] == {"from": "new"}
    assert parent_of("below") == "moved"
    below = group_of(get_or_create(api_client, {"user_group_id": "below"}))
    assert below["computed_properties"] == {"from": "new"}


def test_put_null_detaches(api_client):
    make(api_client, "parent", properties={"a": 1})
    make(api_client, "child", parent="parent")
    child = group_of(put(api_client, {"user_group_id": "child", "parent_user_group_id": None}))
    assert child["parent_user_group_id"] is None
    assert child["computed_properties"] == {}
    assert parent_of("child") is None


def test_put_without_the_field_keeps_the_parent(api_client):
    make(api_client, "parent")
    make(api_client, "child", parent="parent")
    child = group_of(put(api_client, {"user_group_id": "child", "name": "Renamed"}))
    assert child["parent_user_group_id"] == "parent"


@pytest.mark.parametrize(
    ("moved", "under"),
    [
        ("level-1", "level-1"),
        ("level-1", "level-2"),
        ("level-1", "level-3"),
        ("level-2", "level-3"),
    ],
    ids=["itself", "its-child", "its-grandchild", "a-middle-one-under-its-child"],
)
def test_a_move_that_makes_a_cycle_is_a_conflict_and_changes_nothing(api_client, moved, under):
    chain(api_client, 3)
    with database_unchanged():
        response = put(api_client, {"user_group_id": moved, "parent_user_group_id": under})
    error = assert_error(response, 409, "conflict")
    assert error["message"] == "A group cannot be put under itself or one of its descendants."


def test_a_move_that_makes_a_descendant_too_deep_is_a_conflict(api_client):
    chain(api_client, 3, prefix="deep")  # deep-1 > deep-2 > deep-3: 3 levels high
    chain(api_client, 3, prefix="other")  # other-3 is at level 3
    with database_unchanged():
        # deep-3 would be at level 3 + 3 = 6 > 5, though deep-1 itself would be at 4.
        response = put(api_client, {"user_group_id": "deep-1", "parent_user_group_id": "other-3"})
    assert_error(response, 409, "conflict")
    # Under other-2, deep-3 reaches level 5 exactly: allowed.
    moved = group_of(
        put(api_client, {"user_group_id": "deep-1", "parent_user_group_id": "other-2"})
    )
    assert moved["parent_user_group_id"] == "other-2"


def test_a_move_under_an_unknown_parent_changes_nothing_else(api_client):
    make(api_client, "g", properties={"a": 1})
    with database_unchanged():
        response = put(
            api_client,
            {"user_group_id": "g", "name": "New", "properties": {}, "parent_user_group_id": "x"},
        )
    assert assert_error(response, 404, "not_found")["message"] == UNKNOWN_PARENT


def test_a_move_of_an_unknown_group_is_404(api_client):
    make(api_client, "p")
    response = put(api_client, {"user_group_id": "nobody", "parent_user_group_id": "p"})
    assert_error(response, 404, "not_found")


@pytest.fixture
def received():
    """What ``group_moved`` and ``group_deleted`` sent, as (signal name, kwargs)."""
    events = []

    def moved(sender, **kwargs):
        events.append(("moved", kwargs))

    def deleted(sender, **kwargs):
        events.append(("deleted", kwargs))

    group_moved.connect(moved, dispatch_uid="test-hierarchy-moved")
    group_deleted.connect(deleted, dispatch_uid="test-hierarchy-deleted")
    yield events
    group_moved.disconnect(dispatch_uid="test-hierarchy-moved")
    group_deleted.disconnect(dispatch_uid="test-hierarchy-deleted")


def test_group_moved_carries_the_old_and_the_new_parent(
    api_client, received, django_capture_on_commit_callbacks
):
    old = make(api_client, "old")
    new = make(api_client, "new")
    make(api_client, "g", parent="old")
    with django_capture_on_commit_callbacks(execute=True):
        put(api_client, {"user_group_id": "g", "parent_user_group_id": "new"})
        put(api_client, {"user_group_id": "g", "parent_user_group_id": "new"})  # no move
        put(api_client, {"user_group_id": "g", "parent_user_group_id": None})
    moves = [kwargs for name, kwargs in received if name == "moved"]
    assert [(m["old_parent_id"], m["new_parent_id"]) for m in moves] == [
        (old["team_id"], new["team_id"]),
        (new["team_id"], None),
    ]
    assert moves[0]["group"].parent_user_group_id == "new"
    assert moves[1]["group"].parent_user_group_id is None


# --- delete -----------------------------------------------------------------------------


def test_delete_of_a_group_with_children_is_409_and_deletes_nothing(api_client):
    chain(api_client, 3)
    with database_unchanged():
        response = delete(api_client, {"user_group_id": "level-1"})
    assert_error(response, 409, "conflict")
    with database_unchanged():
        response = delete(api_client, {"user_group_id": "level-2", "cascade": False})
    assert_error(response, 409, "conflict")


def test_cascade_deletes_the_subtree_and_its_tokens_die(
    api_client, received, django_capture_on_commit_callbacks
):
    groups = chain(api_client, 4)
    make(api_client, "sibling", parent="level-2")
    make(api_client, "outside", parent="level-1")
    with django_capture_on_commit_callbacks(execute=True):
        status, body = status_and_body(
            delete(api_client, {"user_group_id": "level-2", "cascade": True})
        )
    assert status == 200, body
    assert body["deleted_count"] == 4  # level-2, level-3, level-4, sibling
    assert body["user_group"]["provided_id"] == "level-2"
    remaining = set(UserGroup.objects.values_list("provided_id", flat=True))
    assert remaining == {"level-1", "outside"}
    for group in groups[1:]:
        assert resolve_group_token(group["token"]) is None
        assert_error(rotate(api_client, {"current_token": group["token"]}), 404, "not_found")
    deleted = sorted(kwargs["group"].provided_id for name, kwargs in received if name == "deleted")
    assert deleted == ["level-2", "level-3", "level-4", "sibling"]


def test_cascade_on_a_leaf_deletes_one(api_client):
    make(api_client, "leaf")
    body = delete(api_client, {"user_group_id": "leaf", "cascade": True}).json()
    assert body["deleted_count"] == 1
    assert not UserGroup.objects.exists()


def test_delete_without_cascade_of_a_leaf_answers_as_before(api_client):
    make(api_client, "parent")
    make(api_client, "leaf", parent="parent")
    body = delete(api_client, {"user_group_id": "leaf"}).json()
    assert set(body) == {"success", "user_group"}
    assert parent_of("parent") is None and not UserGroup.objects.filter(provided_id="leaf").exists()


@pytest.mark.parametrize("cascade", ["true", 1, None, {}])
def test_cascade_must_be_a_boolean(api_client, cascade):
    make(api_client, "g")
    with database_unchanged():
        response = delete(api_client, {"user_group_id": "g", "cascade": cascade})
    assert_error(response, 400, "invalid", fields=["cascade"])


# --- list -------------------------------------------------------------------------------


def test_list_filters_on_direct_children_and_shows_parents(api_client, other_workspace):
    chain(api_client, 3)
    make(api_client, "second-child", parent="level-1")
    UserGroupFactory(workspace=other_workspace, provided_id="level-1")
    body = api_client.get("/api/user/list?parent_user_group_id=level-1").json()
    assert body["total_count"] == 2
    listed = {group["provided_id"]: group["parent_user_group_id"] for group in body["user_groups"]}
    assert listed == {"level-2": "level-1", "second-child": "level-1"}
    everything = api_client.get("/api/user/list").json()["user_groups"]
    assert {g["provided_id"]: g["parent_user_group_id"] for g in everything} == {
        "level-1": None,
        "level-2": "level-1",
        "level-3": "level-2",
        "second-child": "level-1",
    }
    none = api_client.get("/api/user/list?parent_user_group_id=nobody").json()
    assert none["total_count"] == 0 and none["user_groups"] == []


def test_list_parent_filter_is_strict_utf8(api_client):
    response = api_client.get("/api/user/list?parent_user_group_id=caf%E9")
    assert_error(response, 400, "invalid", fields=["parent_user_group_id"])


# --- the embed side -----------------------------------------------------------------------


def test_the_embed_side_uses_the_computed_values(api_client):
    make(api_client, "parent", properties={"region": "EU", "tier": 1}, mapping={"sales": "eu"})
    child = make(api_client, "child", parent="parent", properties={"tier": 2})
    record = resolve_group_token(child["token"])
    assert record is not None and record.parent_user_group_id == "parent"
    assert group_variables(record) == {"region": "EU", "tier": 2}
    assert data_source_for(record, "sales") == "eu"
    assert data_source_for(record, "hr") is None


def test_the_embed_side_of_a_group_without_parent(group):
    SchemaMappingFactory(group=group, schema_id="sales", data_source_id="pg-1")
    record = resolve_group_token(group.token)
    assert record is not None
    assert group_variables(record) == group.properties
    assert data_source_for(record, "sales") == "pg-1"


# --- query budgets ------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [1, 2, 5])
def test_get_of_an_existing_group_costs_two_queries_at_any_depth(
    api_client, recently_used_key, depth, django_assert_num_queries
):
    """The key, then the group with its ancestors in one statement (the contract allows
    three at depth: two are spent)."""
    groups = chain(api_client, depth)
    for group in groups:
        SchemaMappingFactory(group_id=group["team_id"], schema_id=f"s{group['team_id']}")
    deepest = groups[-1]["provided_id"]
    with django_assert_num_queries(2):
        got = group_of(get_or_create(api_client, {"user_group_id": deepest}))
    assert len(got["computed_mapping"]) == depth


def test_create_under_a_parent_costs_at_most_eleven_queries(
    api_client, recently_used_key, django_assert_max_num_queries
):
    chain(api_client, 4)
    with django_assert_max_num_queries(11):  # its audit event, the webhooks that may get it
        make(api_client, "new", parent="level-4", mapping={"s": "d"})


def test_a_move_costs_at_most_thirteen_queries(
    api_client, recently_used_key, django_assert_max_num_queries
):
    chain(api_client, 3)
    make(api_client, "other")
    # And its audit event, which names the old parent by its id (one read).
    with django_assert_max_num_queries(13):
        moved = group_of(
            put(api_client, {"user_group_id": "level-2", "parent_user_group_id": "other"})
        )
    assert moved["parent_user_group_id"] == "other"


def test_a_list_page_costs_at_most_five_queries_whatever_the_depths(
    api_client, recently_used_key, django_assert_max_num_queries
):
    chain(api_client, 5)
    chain(api_client, 3, prefix="other")
    with django_assert_max_num_queries(5):
        body = api_client.get("/api/user/list").json()
    assert body["total_count"] == 8
    assert [g["parent_user_group_id"] for g in body["user_groups"]][:2] == [None, "level-1"]


@pytest.mark.parametrize("width", [1, 90])
def test_a_cascading_delete_costs_at_most_seventeen_queries_up_to_a_hundred_groups(
    api_client, recently_used_key, width, django_assert_max_num_queries
):
    chain(api_client, 3)
    for n in range(width):
        make(api_client, f"leaf-{n}", parent="level-3")
    # The key, a savepoint, the lock, the group, the subtree, its records (3), the
    # detach, Django's delete (the rows, their children, the mappings, the groups), the
    # audit events (one INSERT; two past SQLite's 999 parameters, 90 events), the
    # webhooks that may receive them (one SELECT), the release. Django deletes 100 rows
    # per statement: one more query per 100 groups.
    with django_assert_max_num_queries(17):
        body = delete(api_client, {"user_group_id": "level-1", "cascade": True}).json()
    assert body["deleted_count"] == 3 + width


# --- the move race --------------------------------------------------------------------

ROUNDS = 8


@pytest.mark.django_db(transaction=True)
def test_moves_that_together_make_a_cycle_never_both_succeed(api_key):
    """Each round, every thread moves one group of a ring under the next one; all the
    moves together would close the ring. Threads are released at once, each on its own
    connection: at least one must be refused, and no cycle may ever be stored."""
    ring = ["ring-a", "ring-b", "ring-c"]
    client = client_for(api_key.key)
    for provided_id in ring:
        make(client, provided_id)
    for _round in range(ROUNDS):
        for provided_id in ring:  # everyone back at the top
            put(client, {"user_group_id": provided_id, "parent_user_group_id": None})
        size = 2 if _round % 2 else 3  # a two-group cycle, then a three-group one
        moves = [(ring[i], ring[(i + 1) % size]) for i in range(size)]
        results = run_together(size, lambda i, moves=moves: move(api_key.key, *moves[i]))
        statuses = sorted(status for status, _ in results)
        assert statuses == [200] * (size - 1) + [409], results
        refused = next(body for status, body in results if status == 409)
        assert refused["error"]["code"] == "conflict"
        assert_no_cycle()


def move(key, provided_id, parent):
    body = {"user_group_id": provided_id, "parent_user_group_id": parent}
    return status_and_body(put(client_for(key), body))


def assert_no_cycle():
    parents = dict(UserGroup.objects.values_list("pk", "parent_id"))
    for start in parents:
        seen, current = set(), start
        while current is not None:
            assert current not in seen, f"a cycle through team_id={current}"
            seen.add(current)
            current = parents[current]


@pytest.mark.parametrize("depth", [1, 5])
def test_resolving_a_group_token_costs_one_query_at_any_depth(
    api_client, depth, django_assert_num_queries
):
    deepest = chain(api_client, depth)[-1]
    with django_assert_num_queries(1):
        record = resolve_group_token(deepest["token"])
    assert record is not None and record.provided_id == deepest["provided_id"]

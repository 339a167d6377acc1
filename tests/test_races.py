"""Races are settled by the database: a unique constraint for get-or-create, a
compare-and-swap for rotation. Real threads, each with its own connection, hit one
database (a file on SQLite, so every connection sees the same one)."""

import logging
import threading
import time

import pytest
from django.db import connection, connections

from tests.support.api import client_for, get_or_create, rotate, status_and_body
from tests.support.concurrency import JOIN_TIMEOUT, THREADS, run_together
from tests.support.factories import UserGroupFactory
from usergroups import crypto, services
from usergroups.models import SchemaMapping, UserGroup

pytestmark = pytest.mark.django_db(transaction=True)


def test_concurrent_get_or_create_makes_one_group(api_key):
    body = {"user_group_id": "race-new", "mapping": {"s1": "d1", "s2": "d2"}}
    results = run_together(
        THREADS, lambda i: status_and_body(get_or_create(client_for(api_key.key), body))
    )

    assert [status for status, _ in results] == [200] * THREADS, results
    groups = UserGroup.objects.filter(workspace=api_key.workspace, provided_id="race-new")
    assert groups.count() == 1
    group = groups.get()
    assert SchemaMapping.objects.filter(group=group).count() == 2
    assert sum(body["new_user_group"] is True for _, body in results) == 1
    tokens = {body["user_group"]["token"] for _, body in results}
    assert tokens == {group.token}
    assert crypto.digest(group.token) == group.token_digest
    team_ids = {body["user_group"]["team_id"] for _, body in results}
    assert team_ids == {group.team_id}
    # Every answer, the losers' too, carries the winner's mapping.
    assert all(body["user_group"]["mapping"] == {"s1": "d1", "s2": "d2"} for _, body in results)


def test_concurrent_get_or_create_of_different_ids(api_key):
    results = run_together(
        THREADS,
        lambda i: status_and_body(
            get_or_create(client_for(api_key.key), {"user_group_id": f"race-{i % 4}"})
        ),
    )

    assert [status for status, _ in results] == [200] * THREADS, results
    assert UserGroup.objects.filter(workspace=api_key.workspace).count() == 4
    assert sum(body["new_user_group"] for _, body in results) == 4
    for provided_id in (f"race-{n}" for n in range(4)):
        answers = [body for _, body in results if body["user_group"]["provided_id"] == provided_id]
        assert len({body["user_group"]["token"] for body in answers}) == 1
        assert sum(body["new_user_group"] for body in answers) == 1


def test_concurrent_rotations_have_one_winner(api_key, group):
    old_token = group.token
    results = run_together(
        THREADS,
        lambda i: status_and_body(rotate(client_for(api_key.key), {"current_token": old_token})),
    )

    statuses = sorted(status for status, _ in results)
    assert statuses == [200] + [404] * (THREADS - 1), results
    (winner,) = [body for status, body in results if status == 200]
    new_token = winner["user_group"]["token"]
    assert new_token != old_token
    assert all(body["error"]["code"] == "not_found" for status, body in results if status == 404)
    stored = UserGroup.objects.get(pk=group.pk)
    assert stored.token_digest == crypto.digest(new_token)
    assert stored.token == new_token
    # The instance loaded before the race shows the winner's token once reloaded.
    assert group.token == old_token
    group.refresh_from_db()
    assert group.token == new_token
    assert UserGroup.objects.filter(token_digest=crypto.digest(old_token)).count() == 0


def test_concurrent_rotation_chains_never_fork(api_key, group):
    """Each thread rotates whatever token it last saw, several times: the chain of tokens
    stays linear (every success consumed the token current at that moment)."""
    lock = threading.Lock()
    state = {"token": group.token}
    wins = []

    def call(index):
        for _ in range(3):
            with lock:
                token = state["token"]
            status, body = status_and_body(
                rotate(client_for(api_key.key), {"current_token": token})
            )
            if status == 200:
                with lock:
                    wins.append((token, body["user_group"]["token"]))
                    if state["token"] == token:
                        state["token"] = body["user_group"]["token"]
            else:
                assert status == 404, body

    run_together(THREADS, call)

    consumed = [old for old, _ in wins]
    assert len(consumed) == len(set(consumed)), "one token rotated twice"
    chain = dict(wins)
    token, steps = group.token, 0
    while token in chain:
        token, steps = chain[token], steps + 1
    assert steps == len(wins)
    assert UserGroup.objects.get(pk=group.pk).token_digest == crypto.digest(token)


def test_lost_insert_race_returns_the_stored_group(api_key, group, monkeypatch):
    """Deterministic: the first lookup misses (as if the winner committed just after it),
    so the insert hits the unique constraint and the retry reads the stored group."""
    SchemaMapping.objects.create(group=group, schema_id="s", data_source_id="d")
    real_find_group = services.groups.find_group
    misses = []

    def find_group_once_missing(workspace_id, provided_id):
        if not misses:
            misses.append(provided_id)
            return None
        return real_find_group(workspace_id, provided_id)

    monkeypatch.setattr(services.groups, "find_group", find_group_once_missing)
    found, created = services.groups.get_or_create_group(
        group.workspace_id, group.provided_id, name="other name", mapping={"x": "y"}
    )

    assert misses == [group.provided_id]
    assert created is False
    assert found.team_id == group.team_id
    assert found.name == group.name
    assert found.mapping == {"s": "d"}
    assert found.token == group.token
    assert UserGroup.objects.filter(provided_id=group.provided_id).count() == 1
    assert SchemaMapping.objects.filter(schema_id="x").count() == 0

    # And through the API: the loser answers 200 with the stored group, not new.
    misses.clear()
    status, body = status_and_body(
        get_or_create(client_for(api_key.key), {"user_group_id": group.provided_id})
    )
    assert misses == [group.provided_id]
    assert status == 200, body
    assert body["new_user_group"] is False
    assert body["user_group"]["token"] == group.token


def test_insert_race_lost_to_a_group_deleted_before_it_is_read(api_key, group, monkeypatch):
    """Deterministic: the lookup misses, the insert meets the stored group, and that group
    is deleted before the loser reads it. The id is free again: it is created, not a 500."""
    real_find_group, real_find_locked = services.groups.find_group, services.groups.read_race_winner
    misses, deleted = [], []

    def find_group_once_missing(workspace_id, provided_id):
        if not misses:
            misses.append(provided_id)
            return None
        return real_find_group(workspace_id, provided_id)

    def delete_winner_first(workspace_id, provided_id):
        if not deleted:
            deleted.append(UserGroup.objects.filter(pk=group.pk).delete())
        return real_find_locked(workspace_id, provided_id)

    monkeypatch.setattr(services.groups, "find_group", find_group_once_missing)
    monkeypatch.setattr(services.groups, "read_race_winner", delete_winner_first)
    status, body = status_and_body(
        get_or_create(client_for(api_key.key), {"user_group_id": group.provided_id})
    )

    assert (misses, len(deleted)) == ([group.provided_id], 1)
    assert status == 200, body
    assert body["new_user_group"] is True
    stored = UserGroup.objects.get(workspace=group.workspace, provided_id=group.provided_id)
    assert stored.team_id == body["user_group"]["team_id"] != group.team_id
    assert stored.token == body["user_group"]["token"] != group.token


def test_rename_onto_an_id_freed_meanwhile_is_retried(api_key, monkeypatch):
    """The rename meets the group holding the new id, which is deleted before the
    conflict is looked into: the id is free, so the rename is run again and succeeds."""
    renamed = UserGroupFactory(workspace=api_key.workspace, provided_id="from")
    holder = UserGroupFactory(workspace=api_key.workspace, provided_id="to")
    real_update, calls = services.groups.update_locked, []

    def update_then_free_the_id(*args):
        calls.append(args)
        try:
            return real_update(*args)
        finally:
            if len(calls) == 1:
                UserGroup.objects.filter(pk=holder.pk).delete()

    monkeypatch.setattr(services.groups, "update_locked", update_then_free_the_id)
    group = services.groups.update_group(renamed.workspace_id, "from", {"provided_id": "to"})

    assert len(calls) == 2
    assert (group.team_id, group.provided_id) == (renamed.team_id, "to")
    assert UserGroup.objects.get(pk=renamed.pk).provided_id == "to"


def test_rename_onto_a_taken_id_is_refused_not_retried(api_key):
    UserGroupFactory(workspace=api_key.workspace, provided_id="from")
    UserGroupFactory(workspace=api_key.workspace, provided_id="to")
    with pytest.raises(services.groups.ProvidedIdTaken):
        services.groups.update_group(api_key.workspace_id, "from", {"provided_id": "to"})
    assert UserGroup.objects.filter(provided_id="from").exists()


@pytest.mark.skipif(
    "connection.vendor != 'postgresql'",
    reason="needs row locks and a per-session deadlock_timeout (PostgreSQL)",
)
def test_update_that_loses_a_deadlock_is_run_again(api_key, caplog):
    """A real deadlock: another transaction frees id "b" (holding its row), our rename of
    "a" to "b" waits for it, then it updates "a", which our transaction holds. PostgreSQL
    rolls ours back (its deadlock_timeout is the shorter); run again, the rename goes
    through once the other commits."""
    a = UserGroupFactory(workspace=api_key.workspace, provided_id="a")
    b = UserGroupFactory(workspace=api_key.workspace, provided_id="b")
    table = connection.ops.quote_name(UserGroup._meta.db_table)
    other = connections.create_connection(connection.alias)
    result = {}

    def rename():
        try:
            result["group"] = services.groups.update_group(
                a.workspace_id, "a", {"provided_id": "b"}
            )
        except BaseException as exc:
            result["error"] = exc
        finally:
            connections.close_all()

    try:
        other.set_autocommit(False)
        with other.cursor() as cursor:
            cursor.execute("SET deadlock_timeout = '10s'")
            cursor.execute(f"UPDATE {table} SET provided_id = 'b-old' WHERE team_id = %s", [b.pk])
            thread = threading.Thread(target=rename)
            with caplog.at_level(logging.INFO, logger="usergroups"):
                thread.start()
                wait_until_blocked(cursor, other)
                cursor.execute(f"UPDATE {table} SET name = 'by other' WHERE team_id = %s", [a.pk])
                other.commit()
                thread.join(JOIN_TIMEOUT)
    finally:
        other.close()

    assert not thread.is_alive()
    assert "error" not in result, result
    assert (result["group"].provided_id, result["group"].name) == ("b", "by other")
    assert "lost a conflict" in caplog.text


def wait_until_blocked(cursor, other, timeout=JOIN_TIMEOUT):
    """Until a backend other than ``other``'s waits for a lock in this database."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        cursor.execute("SELECT pg_stat_clear_snapshot()")  # else frozen for the transaction
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        )
        if cursor.fetchone()[0]:
            return
        time.sleep(0.02)
    raise AssertionError("the rename never waited for the other transaction")

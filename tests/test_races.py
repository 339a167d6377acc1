"""Races are settled by the database: a unique constraint for get-or-create, a
compare-and-swap for rotation. Real threads, each with its own connection, hit one
database (a file on SQLite, so every connection sees the same one)."""

import threading

import pytest
from django.db import connections

from tests.support.api import client_for, get_or_create, rotate, status_and_body
from usergroups import crypto, services
from usergroups.models import SchemaMapping, UserGroup

THREADS = 8
JOIN_TIMEOUT = 60


def run_together(count, call):
    """Run ``call(i)`` in ``count`` threads released at once; their results, in order.

    Each thread closes its own database connections when done, so none is left open
    when the test database is flushed or dropped.
    """
    barrier = threading.Barrier(count)
    results = [None] * count
    errors = []

    def worker(index):
        try:
            barrier.wait(timeout=JOIN_TIMEOUT)
            results[index] = call(index)
        except BaseException as exc:  # reported by the test, not lost in the thread
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_TIMEOUT)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    assert not errors, errors
    return results


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
    real_find_group = services.find_group
    misses = []

    def find_group_once_missing(workspace_id, provided_id):
        if not misses:
            misses.append(provided_id)
            return None
        return real_find_group(workspace_id, provided_id)

    monkeypatch.setattr(services, "find_group", find_group_once_missing)
    found, created = services.get_or_create_group(
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

"""A real server: gunicorn with several worker processes on one SQLite file.

Threads in one process (test_races.py) cannot show what separate processes do to
SQLite: each worker has its own connection and its own view of the lock, and a missing
busy timeout or a deferred transaction answers 500 "database is locked". Here the
example project runs exactly as deployed (its own settings, not the test settings).
"""

import sqlite3
import threading
from contextlib import closing
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.support.deployment import migrated_site
from tests.support.gunicorn import Gunicorn
from tests.support.http import call_api

pytestmark = pytest.mark.live

WORKERS = 3
TIMEOUT = 20
EMBED_PATH = "/api/user/embed-token"


class Server:
    """The live server as these tests use it: its API with one key, its database file."""

    def __init__(self, base_url: str, key: str, database: Path):
        self.base_url, self.key, self.database = base_url, key, database

    def groups_per_id(self, like: str) -> dict[str, int]:
        """Rows per ``provided_id`` in the server's database file, read directly."""
        with closing(sqlite3.connect(self.database, timeout=TIMEOUT)) as db:
            rows = db.execute(
                "SELECT provided_id, COUNT(*) FROM usergroups_usergroup"
                " WHERE provided_id LIKE ? GROUP BY provided_id",
                (like,),
            ).fetchall()
        return dict(rows)

    def get_or_create(self, user_group_id: str) -> tuple[int, Any]:
        body = {"user_group_id": user_group_id}
        return call_api(self.base_url, self.key, "GET", body, timeout=TIMEOUT)

    def rotate(self, token: str) -> tuple[int, Any]:
        body = {"current_token": token}
        return call_api(self.base_url, self.key, "POST", body, timeout=TIMEOUT)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("live")
    env, key = migrated_site(f"sqlite:///{tmp / 'db.sqlite3'}", "live")
    gunicorn = Gunicorn(env, tmp / "gunicorn.log", WORKERS)
    with gunicorn:
        yield Server(gunicorn.base_url, key, tmp / "db.sqlite3")
    output = gunicorn.log()
    # Whatever the answers were, no worker may have logged a server error.
    assert "Traceback" not in output, output[-5000:]
    assert "database is locked" not in output, output[-5000:]


def concurrently(calls):
    """Run every zero-argument call in its own thread, released together."""
    barrier = threading.Barrier(len(calls))
    results = [None] * len(calls)

    def worker(index):
        barrier.wait(timeout=TIMEOUT)
        try:
            results[index] = calls[index]()
        except Exception as exc:  # a timeout or a reset is a failure, reported below
            results[index] = (None, {"exception": repr(exc)})

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT * 2)
    assert not any(thread.is_alive() for thread in threads)
    return results


def assert_no_server_errors(results):
    failed = [(status, body) for status, body in results if status is None or status >= 500]
    assert not failed, failed


def test_same_new_id_on_every_worker_makes_one_group(server):
    for round_ in range(3):
        results = concurrently([lambda r=round_: server.get_or_create(f"same-{r}")] * 12)

        assert_no_server_errors(results)
        assert [status for status, _ in results] == [200] * 12, results
        assert sum(body["new_user_group"] for _, body in results) == 1
        assert len({body["user_group"]["token"] for _, body in results}) == 1
        assert len({body["user_group"]["team_id"] for _, body in results}) == 1
    assert server.groups_per_id("same-%") == {f"same-{n}": 1 for n in range(3)}


def test_different_ids_at_once(server):
    ids = [f"many-{n}" for n in range(8)]
    results = concurrently([lambda i=i: server.get_or_create(i) for i in ids * 3])

    assert_no_server_errors(results)
    assert [status for status, _ in results] == [200] * len(results), results
    by_id = {}
    for _, body in results:
        by_id.setdefault(body["user_group"]["provided_id"], []).append(body)
    assert sorted(by_id) == sorted(ids)
    for answers in by_id.values():
        assert sum(body["new_user_group"] for body in answers) == 1
        assert len({body["user_group"]["token"] for body in answers}) == 1
        assert len({body["user_group"]["team_id"] for body in answers}) == 1
    team_ids = {answers[0]["user_group"]["team_id"] for answers in by_id.values()}
    assert len(team_ids) == len(ids)
    assert server.groups_per_id("many-%") == dict.fromkeys(ids, 1)


def test_concurrent_rotations_have_one_winner(server):
    status, body = server.get_or_create("rotated")
    assert status == 200
    token = body["user_group"]["token"]
    for _round in range(3):
        results = concurrently([lambda t=token: server.rotate(t)] * 9)

        assert_no_server_errors(results)
        statuses = sorted(status for status, _ in results)
        assert statuses == [200] + [404] * 8, results
        (winner,) = [body for status, body in results if status == 200]
        new_token = winner["user_group"]["token"]
        # The winner's token is the one stored: get-or-create shows it, and the old is gone.
        status, body = server.get_or_create("rotated")
        assert (status, body["user_group"]["token"]) == (200, new_token)
        assert server.rotate(token)[0] == 404
        token = new_token


def test_mixed_load_never_answers_5xx(server):
    status, body = server.get_or_create("mixed")
    assert status == 200
    token = body["user_group"]["token"]
    calls = [lambda n=n: server.get_or_create(f"mixed-{n % 5}") for n in range(15)]
    calls += [lambda: server.rotate(token)] * 5
    calls += [lambda: server.get_or_create("mixed")] * 5
    results = concurrently(calls)

    assert_no_server_errors(results)
    statuses = [status for status, _ in results]
    assert statuses[:15] == [200] * 15, results
    assert sorted(statuses[15:20]) == [200] + [404] * 4, results
    assert statuses[20:] == [200] * 5, results
    assert server.groups_per_id("mixed-%") == {f"mixed-{n}": 1 for n in range(5)}


def test_every_revocation_axis_is_seen_by_every_worker(server):
    """Tokens every worker has verified once (so none is new to any of them), revoked on
    each axis: refused at once by every worker. The checks go out concurrently, more
    than there are workers, so sync workers each take some."""
    api = partial(call_api, server.base_url, server.key, timeout=TIMEOUT)
    for group in ("axis-parent", "axis-other"):
        assert server.get_or_create(group)[0] == 200
    body = {"user_group_id": "axis-child", "parent_user_group_id": "axis-parent"}
    assert api("GET", body)[0] == 200

    def mint(group, **fields):
        status, answer = api("POST", {"user_group_id": group, **fields}, path=EMBED_PATH)
        assert status == 200, answer
        return answer["embed_token"]

    def seen_by_all(token):
        calls = [partial(api, "POST", {"embed_token": token}, path=f"{EMBED_PATH}/introspect")]
        results = concurrently(calls * WORKERS * 4)
        assert_no_server_errors(results)
        return {answer["active"] for _, answer in results}

    axes = [
        ({"user_group_id": "axis-parent", "subtree": True}, "axis-child", {}),
        ({"end_user_id": "ann"}, "axis-other", {"end_user": {"id": "ann"}}),
        (None, "axis-other", {}),  # the token itself
        ({"all": True}, "axis-other", {"end_user": {"id": "bob"}}),
    ]
    for revocation, group, fields in axes:
        token, survivor = mint(group, **fields), mint("axis-other")
        assert seen_by_all(token) == {True}
        status, answer = api(
            "POST", revocation or {"embed_token": token}, path=f"{EMBED_PATH}/revoke"
        )
        assert status == 200, answer
        assert seen_by_all(token) == {False}, revocation
        if revocation != {"all": True}:
            assert seen_by_all(survivor) == {True}
        assert seen_by_all(mint(group, **fields)) == {True}  # minted afterwards

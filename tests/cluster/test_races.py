"""The contract's races across hosts: concurrent requests through HAProxy, which spreads
them over the three hosts, each with its own processes and database connections (through
PgBouncer). Each race runs several rounds; every round is checked, and over the rounds
every host must have served some of the racing requests."""

import collections
import uuid

import pytest

from tests.support.concurrency import run_together
from tests.support.postgres import stored_groups
from usergroups import crypto

pytestmark = pytest.mark.cluster

RACERS = 8
ROUNDS = 4


def new_id(label: str) -> str:
    return f"race-{label}-{uuid.uuid4().hex[:12]}"


def assert_spread(cluster, hosts: collections.Counter) -> None:
    assert set(hosts) == set(cluster.names), f"not every host served: {dict(hosts)}"


def spread_of(cluster, count: int) -> collections.Counter:
    """Which hosts served ``count`` gets made one after another."""
    hosts: collections.Counter = collections.Counter()
    for _ in range(count):
        status, body, host = cluster.call("GET", {"user_group_id": "spread"})
        assert status == 200, body
        hosts[host] += 1
    return hosts


def test_requests_are_spread_over_every_host(cluster, figures):
    """Round robin: every host serves, and in a steady rotation a third each. (After hosts
    come up, HAProxy's rotation first evens out their past; the cluster waits that out,
    ``Cluster.settle_rotation``, and here a second window of 30 is the one held even.)"""
    haproxy = cluster.haproxy
    haproxy.wait_until(lambda states: all(states.get(n) == "UP" for n in cluster.names), "up")
    downs = {name: row["chkdown"] for name, row in haproxy.server_stats().items()}
    first = spread_of(cluster, 30)
    steady = spread_of(cluster, 30)
    stats = haproxy.server_stats()
    assert {n: r["chkdown"] for n, r in stats.items()} == downs, haproxy.log()[-3000:]
    figures.append(f"round robin, 2 x 30 gets in a row: {dict(first)}, then {dict(steady)}")
    assert_spread(cluster, first + steady)
    assert all(steady[name] >= 8 for name in cluster.names), (first, steady)


def test_one_group_per_id_under_concurrent_get_or_create(cluster):
    hosts = collections.Counter()
    for _ in range(ROUNDS):
        provided_id = new_id("create")
        answers = run_together(
            RACERS, lambda i, body={"user_group_id": provided_id}: cluster.call("GET", body)
        )
        assert [status for status, _, _ in answers] == [200] * RACERS, answers
        groups = [body["user_group"] for _, body, _ in answers]
        assert len({group["token"] for group in groups}) == 1
        assert len({group["team_id"] for group in groups}) == 1
        assert sum(body["new_user_group"] for _, body, _ in answers) == 1
        hosts.update(host for _, _, host in answers)
        assert len(stored_groups("h_g_cluster", "cluster", provided_id)[provided_id]) == 1
    assert_spread(cluster, hosts)


def test_one_winner_per_rotation(cluster):
    hosts = collections.Counter()
    for _ in range(ROUNDS):
        provided_id = new_id("rotate")
        status, body, _ = cluster.call("GET", {"user_group_id": provided_id})
        assert status == 200, body
        token = body["user_group"]["token"]
        answers = run_together(
            RACERS, lambda i, body={"current_token": token}: cluster.call("POST", body)
        )
        statuses = sorted(status for status, _, _ in answers)
        assert statuses == [200] + [404] * (RACERS - 1), answers
        winner = next(body for status, body, _ in answers if status == 200)
        new_token = winner["user_group"]["token"]
        (row,) = stored_groups("h_g_cluster", "cluster", provided_id)[provided_id]
        assert row["token_digest"] == crypto.digest(new_token)
        # The old token is refused at once by every host; the new one works on each.
        for _ in cluster.names:
            assert cluster.call("POST", {"current_token": token})[0] == 404
        hosts.update(host for _, _, host in answers)
    assert_spread(cluster, hosts)


def test_a_move_race_makes_no_cycle(cluster):
    """A under B and B under A, at once: together they would make a cycle, so they must
    not both succeed (contract section 5); the loser is the 409 of a move the stored
    hierarchy refuses (docs/hierarchy.md)."""
    hosts = collections.Counter()
    for _ in range(ROUNDS * 2):
        a, b = new_id("move-a"), new_id("move-b")
        for provided_id in (a, b):
            assert cluster.call("GET", {"user_group_id": provided_id})[0] == 200
        moves = [(a, b), (b, a)]
        answers = run_together(
            2,
            lambda i, moves=moves: cluster.call(
                "PUT", {"user_group_id": moves[i][0], "parent_user_group_id": moves[i][1]}
            ),
        )
        statuses = sorted(status for status, _, _ in answers)
        assert statuses in ([200, 409], [409, 409]), answers
        for status, body, _ in answers:
            if status == 409:
                assert body["error"] == {
                    "code": "conflict",
                    "message": "A group cannot be put under itself or one of its descendants.",
                }
        parents = {
            provided_id: cluster.call("GET", {"user_group_id": provided_id})[1]["user_group"][
                "parent_user_group_id"
            ]
            for provided_id in (a, b)
        }
        assert not (parents[a] == b and parents[b] == a), parents
        hosts.update(host for _, _, host in answers)
    assert len(hosts) >= 2, f"the moves all went to one host: {dict(hosts)}"

"""Throttling counted once across hosts: with ``USERGROUPS_THROTTLE_RATE=20/minute`` and
the shared Redis cache, 20 requests of a key pass in total, whichever hosts serve them,
not 20 per host (or per worker, as a per-process cache would count)."""

import collections
import time

import pytest

from tests.support.concurrency import run_together

pytestmark = pytest.mark.cluster

RATE = 20


@pytest.fixture(scope="module")
def throttled(cluster):
    """The hosts restarted with the rate set; restarted without it afterwards."""
    cluster.restart_hosts(USERGROUPS_THROTTLE_RATE=f"{RATE}/minute")
    try:
        yield cluster
    finally:
        cluster.restart_hosts()


def in_one_window(needed_seconds: float = 20) -> None:
    """The windows are fixed, on the clock's minutes (the hosts share this machine's clock):
    when fewer than ``needed_seconds`` are left of this one, wait for the next, so that a
    test's requests all fall in one window (a busy machine once took one across the
    boundary, and the new window rightly let one more through)."""
    left = 60 - time.time() % 60
    if left < needed_seconds:
        time.sleep(left + 0.1)


def count(answers) -> tuple[collections.Counter, collections.Counter]:
    return (
        collections.Counter(status for status, _, _ in answers),
        collections.Counter(host for status, _, host in answers if status == 200),
    )


def test_the_rate_is_counted_once_across_hosts(throttled, figures):
    key = throttled.new_key()
    auth = f"Token {key}"
    in_one_window()
    answers = [
        throttled.call("GET", {"user_group_id": "throttled"}, authorization=auth)
        for _ in range(RATE * 2)
    ]
    statuses, passed_on = count(answers)
    # In order, with the serving host: a failure says which request went where.
    story = [
        (status, host, body if status not in (200, 429) else "") for status, body, host in answers
    ]
    assert statuses == {200: RATE, 429: RATE}, story
    assert set(passed_on) == set(throttled.names), story
    refused = next(body for status, body, _ in answers if status == 429)
    assert refused["error"]["code"] == "throttled"
    figures.append(
        f"throttling {RATE}/minute, {RATE * 2} requests one after another: {statuses[200]} passed"
        f" (by host: {dict(sorted(passed_on.items()))}), {statuses[429]} answered 429"
    )


def test_the_rate_holds_under_concurrent_requests(throttled, figures):
    """Concurrent requests of one key, on every host: still exactly the rate passes."""
    key = throttled.new_key()
    auth = f"Token {key}"
    in_one_window()
    answers = []
    for _ in range(5):
        answers += run_together(
            8,
            lambda i: throttled.call("GET", {"user_group_id": "throttled"}, authorization=auth),
        )
    statuses, passed_on = count(answers)
    figures.append(
        f"throttling {RATE}/minute, 40 requests 8 at a time: {statuses[200]} passed"
        f" (by host: {dict(sorted(passed_on.items()))}), {statuses[429]} answered 429"
    )
    assert set(statuses) <= {200, 429}, statuses
    assert statuses[200] == RATE, statuses


def test_without_redis_the_api_answers(throttled, figures):
    """Redis unreachable (the relay to it closed): the API still answers in its own terms,
    serving the request (200) or saying it cannot now (503), never an HTML 500."""
    haproxy = throttled.haproxy
    haproxy.command("disable server redis_relay/redis")
    haproxy.command("shutdown sessions server redis_relay/redis")
    try:
        answers = [
            throttled.call("GET", {"user_group_id": "no-redis"})
            for _ in range(len(throttled.names))
        ]
    finally:
        haproxy.command("enable server redis_relay/redis")
    statuses = collections.Counter(status for status, _, _ in answers)
    figures.append(f"throttling with Redis unreachable: {dict(statuses)}")
    assert all(status in (200, 503) for status in statuses), answers

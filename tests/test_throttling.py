"""Per-key throttling: off by default; 429 with Retry-After and the error body when on."""

import logging

import pytest
from django.core.cache import caches
from django.core.checks import run_checks
from django.test import override_settings
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from tests.support import services
from tests.support.api import client_for, get_or_create
from tests.support.concurrency import run_together
from tests.support.factories import APIKeyFactory
from usergroups.api import throttling
from usergroups.api.throttling import APIKeyRateThrottle
from usergroups.conf import parse_rate

ACME = {"user_group_id": "acme"}
LOCMEM = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}


@pytest.fixture(autouse=True)
def clean_caches():
    with override_settings(CACHES=LOCMEM):
        caches["default"].clear()
        yield


@pytest.mark.parametrize(
    ("rate", "parsed"),
    [
        ("3/minute", (3, 60)),
        ("10/s", (10, 1)),
        ("5000/day", (5000, 86400)),
        ("1/hour", (1, 3600)),
        ("0/minute", None),
        ("-1/minute", None),
        ("x/minute", None),
        ("10/fortnight", None),
        ("10/", None),
        ("1/2/minute", None),
    ],
)
def test_the_check_refuses_exactly_the_rates_the_throttle_cannot_parse(rate, parsed):
    """One parse: the throttle's window, and check usergroups.E005's verdict."""
    with override_settings(USERGROUPS={"THROTTLE_RATE": rate}):
        reported = {m.id for m in run_checks(databases=[])} & {"usergroups.E005"}
        if parsed is None:
            assert reported
            with pytest.raises(ValueError):
                parse_rate(rate)
        else:
            throttle = APIKeyRateThrottle()
            assert not reported
            assert (throttle.num_requests, throttle.duration) == parsed


def test_off_by_default(api_client):
    assert all(get_or_create(api_client, ACME).status_code == 200 for _ in range(30))


@override_settings(USERGROUPS={"THROTTLE_RATE": "3/minute"})
def test_over_the_rate_is_429_with_retry_after(api_client):
    assert [get_or_create(api_client, ACME).status_code for _ in range(3)] == [200, 200, 200]
    response = get_or_create(api_client, ACME)
    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 60
    assert response.json() == {
        "success": 0,
        "error": {"code": "throttled", "message": response.json()["error"]["message"]},
    }
    assert "throttled" in response.json()["error"]["message"].lower()


@override_settings(USERGROUPS={"THROTTLE_RATE": "2/minute"})
def test_counted_per_key(workspace):
    first, second = APIKeyFactory(workspace=workspace), APIKeyFactory(workspace=workspace)
    assert [get_or_create(client_for(first.key), ACME).status_code for _ in range(3)] == [
        200,
        200,
        429,
    ]
    assert get_or_create(client_for(second.key), ACME).status_code == 200


@override_settings(USERGROUPS={"THROTTLE_RATE": "1/minute"})
def test_unauthenticated_requests_are_refused_not_counted(anon_api_client, api_client):
    assert get_or_create(anon_api_client, ACME).status_code == 401
    assert get_or_create(api_client, ACME).status_code == 200


@pytest.mark.needs("redis")
def test_shared_redis_cache_counts_across_clients(api_key):
    # A prefix of this run's own: the Redis may be a developer's, and key pks repeat
    # across runs, so neither the cache's clear() nor a bare key is safe there.
    with (
        services.shared_redis_cache() as shared,
        override_settings(
            CACHES={**LOCMEM, "shared": shared},
            USERGROUPS={"THROTTLE_RATE": "2/minute", "THROTTLE_CACHE": "shared"},
        ),
    ):
        # Two clients stand for two server processes: the count lives in Redis.
        statuses = [get_or_create(client_for(api_key.key), ACME).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]


@pytest.mark.needs("redis")
def test_concurrent_requests_never_pass_more_than_the_rate(api_key):
    """Many requests of one key at once, as several hosts send them: the count is one
    atomic increment in the shared cache, so exactly the rate passes."""
    request = Request(APIRequestFactory().get("/api/user"))
    request.auth = api_key
    with (
        services.shared_redis_cache() as shared,
        # A day's window: a minute's could end mid-run on a loaded machine, and the next
        # window rightly lets 20 more through.
        override_settings(
            CACHES={**LOCMEM, "shared": shared},
            USERGROUPS={"THROTTLE_RATE": "20/day", "THROTTLE_CACHE": "shared"},
        ),
    ):
        allowed = run_together(
            16, lambda i: [APIKeyRateThrottle().allow_request(request, None) for _ in range(5)]
        )
    assert sum(sum(answers) for answers in allowed) == 20


UNREACHABLE = {
    "BACKEND": "django.core.cache.backends.redis.RedisCache",
    "LOCATION": "redis://127.0.0.1:9/0",  # the discard port: nothing listens
    "OPTIONS": {"socket_connect_timeout": 0.5},
}


@override_settings(
    CACHES={**LOCMEM, "down": UNREACHABLE},
    USERGROUPS={"THROTTLE_RATE": "1/minute", "THROTTLE_CACHE": "down"},
)
def test_an_unreachable_cache_lets_requests_through_and_says_so(api_client, caplog):
    with caplog.at_level(logging.WARNING, logger="usergroups.api.throttling"):
        statuses = [get_or_create(api_client, ACME).status_code for _ in range(2)]
    assert statuses == [200, 200]
    assert "Throttling skipped: cache 'down' unreachable" in caplog.text


@override_settings(USERGROUPS={"THROTTLE_RATE": "2/second"})
def test_a_new_window_counts_from_zero(api_client, monkeypatch):
    now = 1_800_000_000.25
    monkeypatch.setattr(throttling.time, "time", lambda: now)
    assert [get_or_create(api_client, ACME).status_code for _ in range(3)] == [200, 200, 429]
    now += 1
    assert [get_or_create(api_client, ACME).status_code for _ in range(3)] == [200, 200, 429]

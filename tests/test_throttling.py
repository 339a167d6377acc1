"""Per-key throttling: off by default; 429 with Retry-After and the error body when on."""

import pytest
from django.core.cache import caches
from django.test import override_settings

from tests.support import services
from tests.support.api import client_for, get_or_create
from tests.support.factories import APIKeyFactory

ACME = {"user_group_id": "acme"}
LOCMEM = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}


@pytest.fixture(autouse=True)
def clean_caches():
    with override_settings(CACHES=LOCMEM):
        caches["default"].clear()
        yield


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
    # across runs, so neither clear() nor a bare key is safe there.
    shared = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": services.REDIS_URL,
        "KEY_PREFIX": services.unique_key_prefix(),
    }
    counter = f"throttle_usergroups_{api_key.pk}"
    with override_settings(
        CACHES={**LOCMEM, "shared": shared},
        USERGROUPS={"THROTTLE_RATE": "2/minute", "THROTTLE_CACHE": "shared"},
    ):
        try:
            # Two clients stand for two server processes: the count lives in Redis.
            statuses = [get_or_create(client_for(api_key.key), ACME).status_code for _ in range(3)]
            assert statuses == [200, 200, 429]
            assert caches["shared"].get(counter) is not None
        finally:
            caches["shared"].delete(counter)

"""Per-key throttling: off by default; 429 with Retry-After and the error body when on."""

import json

import pytest
from django.core.cache import caches
from django.test import override_settings
from rest_framework.test import APIClient

from tests import services
from tests.conftest import API_URL
from tests.factories import APIKeyFactory

LOCMEM = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}


def get(client, user_group_id="acme"):
    body = json.dumps({"user_group_id": user_group_id})
    return client.generic("GET", API_URL, body, content_type="application/json")


def client_for(key):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key.key}")
    return client


@pytest.fixture(autouse=True)
def clean_caches():
    with override_settings(CACHES=LOCMEM):
        caches["default"].clear()
        yield


def test_off_by_default(api_client):
    assert all(get(api_client).status_code == 200 for _ in range(30))


@override_settings(USERGROUPS={"THROTTLE_RATE": "3/minute"})
def test_over_the_rate_is_429_with_retry_after(api_client):
    assert [get(api_client).status_code for _ in range(3)] == [200, 200, 200]
    response = get(api_client)
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
    assert [get(client_for(first)).status_code for _ in range(3)] == [200, 200, 429]
    assert get(client_for(second)).status_code == 200


@override_settings(USERGROUPS={"THROTTLE_RATE": "1/minute"})
def test_unauthenticated_requests_are_refused_not_counted(anon_api_client, api_client):
    assert get(anon_api_client).status_code == 401
    assert get(api_client).status_code == 200


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
            statuses = [get(client_for(api_key)).status_code for _ in range(3)]
            assert statuses == [200, 200, 429]
            assert caches["shared"].get(counter) is not None
        finally:
            caches["shared"].delete(counter)

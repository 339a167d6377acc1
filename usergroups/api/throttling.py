"""Per-API-key rate limiting, off unless ``USERGROUPS["THROTTLE_RATE"]`` is set.

Requests are counted in a Django cache, which must be shared (Redis, Memcached, the
database cache) when several processes or hosts serve the API, named by
``USERGROUPS["THROTTLE_CACHE"]``; a per-process cache would multiply the limit.

The count is a fixed window per key, kept with ``cache.add`` and ``cache.incr``, which
shared caches do atomically: concurrent requests on any number of hosts never pass more
than the rate in one window. (DRF's ``SimpleRateThrottle`` reads a list of times and
writes it back, so concurrent requests overwrite each other's and more pass.) A window
lets at most twice the rate through around its edge, the price of one atomic counter.

When the cache cannot be reached, the request is let through and a warning logged: a
rate limit is not a reason to take the API down with the cache.
"""

import time

from django.core.cache import caches
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from usergroups.conf import parse_rate, usergroups_settings
from usergroups.logs import get_logger
from usergroups.models import APIKey

logger = get_logger(__name__)


class APIKeyRateThrottle(BaseThrottle):
    """At most ``THROTTLE_RATE`` requests per API key in each window of the rate's period."""

    def __init__(self) -> None:
        # Read at construction (once per request) so override_settings applies.
        self.num_requests, self.duration = parse_rate(usergroups_settings.THROTTLE_RATE)
        self.cache = caches[usergroups_settings.THROTTLE_CACHE]
        self.window_ends = 0.0

    def allow_request(self, request: Request, view: APIView) -> bool:
        if not isinstance(request.auth, APIKey):
            return True  # refused by authentication, not counted
        now = time.time()
        window = int(now // self.duration)
        self.window_ends = (window + 1) * self.duration
        key = f"usergroups:throttle:{request.auth.pk}:{self.duration}:{window}"
        try:
            # The entry outlives its window a little, so a clock step never revives it.
            self.cache.add(key, 0, timeout=self.duration + 1)
            count = self.cache.incr(key)
        except ValueError:  # evicted between add and incr: this request opens it again
            self.cache.add(key, 1, timeout=self.duration + 1)
            count = 1
        except Exception:  # noqa: BLE001 (any cache backend's connection error)
            logger.warning("Throttling skipped: cache %r unreachable", self.cache_name())
            return True
        return count <= self.num_requests

    def wait(self) -> float:
        return max(1.0, self.window_ends - time.time())

    def cache_name(self) -> str:
        return str(usergroups_settings.THROTTLE_CACHE)

"""Per-API-key rate limiting, off unless ``USERGROUPS["THROTTLE_RATE"]`` is set.

DRF's throttles count in a Django cache. With several server processes or hosts that
cache must be shared (Redis, Memcached, the database cache), named by
``USERGROUPS["THROTTLE_CACHE"]``; a per-process cache would multiply the limit.
"""

from django.core.cache import caches
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView

from .conf import usergroups_settings
from .models import APIKey


class APIKeyRateThrottle(SimpleRateThrottle):
    scope = "usergroups"

    def __init__(self) -> None:
        # Read at construction (once per request) so override_settings applies.
        self.rate = usergroups_settings.THROTTLE_RATE
        self.num_requests, self.duration = self.parse_rate(self.rate)
        self.cache = caches[usergroups_settings.THROTTLE_CACHE]

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        if not isinstance(request.auth, APIKey):
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.auth.pk}

"""The ``USERGROUPS`` setting, read through one object with documented defaults.

Values are looked up on every access instead of being copied at import time, so
``override_settings(USERGROUPS=...)`` takes effect at once, in tests and elsewhere.
"""

from typing import Any

from django.conf import settings

DEFAULTS: dict[str, Any] = {
    # Seconds an old group token keeps resolving (never rotating) after a rotation.
    "ROTATION_GRACE_SECONDS": 0,
    # Largest request body accepted, in bytes; larger ones get 413.
    "MAX_BODY_BYTES": 1024 * 1024,
    # Largest ``properties`` object, in bytes of compact UTF-8 JSON.
    "MAX_PROPERTIES_BYTES": 64 * 1024,
    # Deepest nesting of ``properties`` (an empty object is depth 1).
    "MAX_PROPERTIES_DEPTH": 32,
    # Most levels of the group hierarchy (a group without a parent is at level 1).
    "MAX_HIERARCHY_DEPTH": 5,
    # Most schema ids one group may map.
    "MAX_MAPPING_ENTRIES": 1000,
    # ``last_used_at`` of an API key is written at most once in this many seconds.
    "KEY_LAST_USED_INTERVAL_SECONDS": 60,
    # Requests per API key, as DRF writes rates ("100/minute"); None turns throttling off.
    "THROTTLE_RATE": None,
    # The Django cache that counts requests; shared (e.g. Redis) when several servers run.
    "THROTTLE_CACHE": "default",
    # Secret that seals group tokens at rest; None means SECRET_KEY (and SECRET_KEY_FALLBACKS).
    "TOKEN_SECRET": None,
    # Older token secrets still accepted for unsealing, like SECRET_KEY_FALLBACKS.
    "TOKEN_SECRET_FALLBACKS": None,
    # Embed tokens (CONTRACT section 6, usergroups.embed).
    # Lifetime of an embed token when the mint request gives no ``expires_in``, in seconds.
    "EMBED_TOKEN_SECONDS": 900,
    # Longest ``expires_in`` a mint request may ask for, in seconds (at least 30).
    "EMBED_TOKEN_MAX_SECONDS": 86400,
    # The ``aud`` claim of every embed token, and the only audience verification accepts.
    "EMBED_TOKEN_AUDIENCE": "usergroups-embed",
    # The ``iss`` claim, and the only issuer verification accepts. A verifier such as
    # Cube may check it: set it per deployment (e.g. the site's URL) when several share keys.
    "EMBED_TOKEN_ISSUER": "usergroups",
    # PEM private key (Ed25519, or EC P-256 for ES256) that signs embed tokens. None
    # derives an Ed25519 key from TOKEN_SECRET (else SECRET_KEY), and keeps the keys of
    # the fallback secrets in the JWK Set so tokens signed before a rotation still verify.
    "EMBED_SIGNING_KEY": None,
    # False: GroupTokenAuthentication refuses every group token (401), leaving the embed
    # side to short-lived embed tokens only.
    "EMBED_ACCEPT_GROUP_TOKENS": True,
    # True: a mint without ``origin`` is refused (400), and so is a token without one at
    # verification; False lets a token without ``origin`` work from any origin.
    "EMBED_REQUIRE_ORIGIN": False,
    # Audit trail (CONTRACT section 8): ``manage.py prune_audit`` deletes events older
    # than this many days.
    "AUDIT_RETENTION_DAYS": 365,
    # Webhooks (CONTRACT section 8, usergroups.services.webhooks).
    # True also allows http and private, loopback or link-local addresses (tests, local
    # development); False: https to public addresses only, checked at registration and
    # at every delivery.
    "WEBHOOK_ALLOW_PRIVATE": False,
    # Seconds a delivery may wait to connect, and then for each read of the answer,
    # before it counts as failed: together they bound what a hanging receiver holds a
    # worker for.
    "WEBHOOK_CONNECT_TIMEOUT_SECONDS": 3,
    "WEBHOOK_TIMEOUT_SECONDS": 10,
    # Backoff: retry n waits BASE * 2**(n-1) seconds (at most MAX), jittered down to half
    # of it; the first retry comes within BASE (at most 15) seconds.
    "WEBHOOK_RETRY_BASE_SECONDS": 10,
    "WEBHOOK_RETRY_MAX_SECONDS": 3600,
    # Attempts of one delivery before it is marked failed.
    "WEBHOOK_MAX_ATTEMPTS": 8,
    # Failed deliveries in a row after which the webhook is disabled.
    "WEBHOOK_DISABLE_AFTER_FAILURES": 5,
    # Seconds a worker holds a delivery it is sending, and its webhook (one attempt to a
    # webhook at a time); one left pending longer (a worker killed mid-send) is enqueued
    # again by the sweeper. Above the two timeouts together.
    "WEBHOOK_LEASE_SECONDS": 60,
    # The TASKS backend alias that runs deliveries.
    "WEBHOOK_TASK_BACKEND": "default",
    # The read model (CONTRACT section 9, usergroups.read_model): "auto" answers hot
    # reads from memory kept current by LISTEN/NOTIFY on PostgreSQL (elsewhere every read
    # goes to the database); False turns it off.
    "READ_MODEL": "auto",
    # Most answers one process keeps in memory (least recently used ones make room).
    "READ_MODEL_MAX_ENTRIES": 10000,
    # The database alias a process listens through; None: "default". Behind a pooler in
    # transaction mode (PgBouncer), an alias with a direct connection to PostgreSQL.
    "LISTEN_DATABASE": None,
}

#: Settings of earlier releases that nothing reads any more, with what replaces each:
#: given, they are reported by check usergroups.W003, never refused.
REMOVED: dict[str, str] = {
    "PREPARED_STATEMENTS": "Server-side prepared statements are psycopg's own options "
    '(DATABASES OPTIONS "prepare_threshold"), see the deployment docs.',
}


class UserGroupsSettings:
    """Attribute access to ``settings.USERGROUPS`` with :data:`DEFAULTS` filled in."""

    def __getattr__(self, name: str) -> Any:
        if name not in DEFAULTS:
            raise AttributeError(f"Unknown USERGROUPS setting: {name!r}")
        options = getattr(settings, "USERGROUPS", {})
        if not isinstance(options, dict):  # reported by check usergroups.E007
            return DEFAULTS[name]
        return options.get(name, DEFAULTS[name])


usergroups_settings = UserGroupsSettings()

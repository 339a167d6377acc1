"""The ``USERGROUPS`` setting: one spec of its keys, and one object that reads them.

:data:`SETTINGS` gives each key its default, the values it takes (the system checks test
them) and the line that opens its row in docs/settings.md (a test holds the page to it).
``usergroups_settings`` looks values up on every access, copying and memoizing nothing, so
any change of the setting applies at once: nothing waits for ``setting_changed``.
"""

import math
from collections.abc import Callable
from typing import Any, NamedTuple

from django.conf import settings

PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """``(requests, seconds)`` of a rate as DRF writes one, ``"100/minute"``; else ValueError."""
    # Not DRF's SimpleRateThrottle.parse_rate: a method of a throttle class the app's is
    # not (it counts atomically), and it takes "0/minute".
    count, period = rate.split("/")
    if int(count) < 1 or period[:1] not in PERIODS:
        raise ValueError(f"Not a rate: {rate!r}")
    return int(count), PERIODS[period[0]]


class Takes(NamedTuple):
    """The values a setting takes, and the system check that reports any other."""

    check: str
    says: str  # the check's message after USERGROUPS['NAME']; {value!r}: the value given
    test: Callable[[Any], bool]


def integer(least: int) -> Takes:
    def test(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= least

    return Takes("usergroups.E003", f"must be an integer of at least {least}", test)


def seconds(most: float = math.inf) -> Takes:
    def test(value: Any) -> bool:
        return isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= most

    bound = f" and at most {most}" if most < math.inf else ""
    return Takes("usergroups.E011", f"must be a number of seconds above 0{bound}", test)


def flag(check: str) -> Takes:
    return Takes(check, "must be True or False", lambda value: isinstance(value, bool))


def text(check: str, says: str = "must be a non-empty string") -> Takes:
    return Takes(check, says, lambda value: isinstance(value, str) and value != "")


def _rate_or_off(value: Any) -> bool:
    try:
        return not value or bool(parse_rate(value))
    except (AttributeError, ValueError):
        return False


#: Not checked, or by a check of its own (usergroups.E004, E006, E008).
ANY_VALUE = Takes("", "", lambda value: True)


class Setting(NamedTuple):
    default: Any
    takes: Takes
    doc: str  # the meaning that opens the setting's row in docs/settings.md


# fmt: off
SETTINGS: dict[str, Setting] = {
    "ROTATION_GRACE_SECONDS": Setting(0, integer(0),
        "Seconds an old group token keeps resolving on dashboard endpoints after a rotation."),
    "MAX_BODY_BYTES": Setting(1024 * 1024, integer(1),
        "Largest request body; a larger one gets 413 `request_too_large`."),
    "MAX_PROPERTIES_BYTES": Setting(64 * 1024, integer(1),
        "Largest `properties`, in bytes of compact UTF-8 JSON."),
    "MAX_PROPERTIES_DEPTH": Setting(32, integer(1),
        "Deepest nesting of `properties` (`{}` is depth 1)."),
    "MAX_MAPPING_ENTRIES": Setting(1000, integer(0),
        "Most schema ids one group may map."),
    "MAX_HIERARCHY_DEPTH": Setting(5, integer(1),
        "Most levels of the group hierarchy; a group without a parent is at level 1."),
    "KEY_LAST_USED_INTERVAL_SECONDS": Setting(60, integer(0),
        "An API key's `last_used_at` is written at most once in this many seconds."),
    "THROTTLE_RATE": Setting(None,
        Takes("usergroups.E005", "{value!r} is not a rate", _rate_or_off),
        "Requests per API key, in DRF's notation; `None` turns throttling off."),
    "THROTTLE_CACHE": Setting("default", ANY_VALUE,
        "The Django cache alias that counts requests."),
    "TOKEN_SECRET": Setting(None, ANY_VALUE,
        "The secret that seals group tokens at rest."),
    "TOKEN_SECRET_FALLBACKS": Setting(None, ANY_VALUE,
        "Older token secrets still accepted for unsealing, used only when `TOKEN_SECRET` is set."),
    "EMBED_TOKEN_SECONDS": Setting(900, integer(30),
        "Lifetime of an embed token when the mint request gives no `expires_in`, in seconds."),
    "EMBED_TOKEN_MAX_SECONDS": Setting(86400, integer(30),
        "The longest `expires_in` a mint request may ask for (a day); more is 400 `invalid`."),
    "EMBED_TOKEN_AUDIENCE": Setting("usergroups-embed", text("usergroups.E009"),
        "The `aud` claim of every embed token, and the only audience verification accepts."),
    "EMBED_TOKEN_ISSUER": Setting("usergroups", text("usergroups.E009"),
        "The `iss` claim, and the only issuer verification accepts."),
    "EMBED_SIGNING_KEY": Setting(None, ANY_VALUE,
        "A PEM private key (Ed25519, or EC P-256 for ES256) that signs and verifies embed tokens."),
    "EMBED_ACCEPT_GROUP_TOKENS": Setting(True, flag("usergroups.E009"),
        "`False`: `GroupTokenAuthentication` refuses every group token (401)."),
    "EMBED_REQUIRE_ORIGIN": Setting(False, flag("usergroups.E009"),
        "`True`: a mint without `origin` is refused, and so is a token without one."),
    "AUDIT_RETENTION_DAYS": Setting(365, integer(1),
        "How many days audit events are kept: `manage.py prune_audit` deletes older ones."),
    "WEBHOOK_ALLOW_PRIVATE": Setting(False, flag("usergroups.E011"),
        "`True` lets webhooks use `http` and addresses that are not public."),
    "WEBHOOK_CONNECT_TIMEOUT_SECONDS": Setting(3, seconds(),
        "Seconds a delivery may wait for its connection; past it, the attempt failed."),
    "WEBHOOK_TIMEOUT_SECONDS": Setting(10, seconds(),
        "Seconds the rest of an attempt may take once connected: the request and the answer."),
    "WEBHOOK_ATTEMPTS_IN_FLIGHT": Setting(10, integer(1),
        "Most attempts a worker process has in flight at once, each to a different webhook."),
    "WEBHOOK_RETRY_BASE_SECONDS": Setting(10, seconds(most=15),  # as the contract says
        "The first retry of a delivery comes within this many seconds."),
    "WEBHOOK_RETRY_MAX_SECONDS": Setting(3600, seconds(),
        "The longest wait between two attempts."),
    "WEBHOOK_MAX_ATTEMPTS": Setting(8, integer(1),
        "Attempts of one delivery before it is marked failed (redeliver it from the admin)."),
    "WEBHOOK_DISABLE_AFTER_FAILURES": Setting(5, integer(1),
        "Failed deliveries in a row after which the webhook is disabled."),
    "WEBHOOK_LEASE_SECONDS": Setting(60, seconds(),
        "Seconds a worker holds a delivery it is sending, and its webhook."),
    "WEBHOOK_TASK_BACKEND": Setting("default", text("usergroups.E011", "must name a TASKS backend"),
        "The `TASKS` backend alias that runs webhook deliveries."),
    "READ_MODEL": Setting("auto", Takes("usergroups.E012", 'must be "auto", True or False',
            lambda value: value == "auto" or isinstance(value, bool)),
        '`"auto"` answers hot reads from per-process memory that PostgreSQL keeps current.'),
    "READ_MODEL_MAX_ENTRIES": Setting(10000, integer(100),
        "Most answers one process keeps; the least recently used make room for new ones."),
    "READ_MODEL_MAX_BYTES": Setting(64 * 1024 * 1024, integer(1024 * 1024),
        "Most bytes of answers one process keeps (64 MiB); the least recently used make room."),
    "LISTEN_DATABASE": Setting(None, Takes("usergroups.E012", "must name a database of DATABASES",
            lambda value: value is None or isinstance(value, str) and value in settings.DATABASES),
        'The database alias each process listens through; `None`: `"default"`.'),
    "TELEMETRY_WORKSPACE": Setting(False, flag("usergroups.E013"),
        "`True` adds the workspace's id to the metrics that can name one: a series per workspace."),
}
# fmt: on

#: Settings of earlier releases that nothing reads any more, with what replaces each:
#: given, they are reported by check usergroups.W003, never refused.
REMOVED: dict[str, str] = {
    "PREPARED_STATEMENTS": "Server-side prepared statements are psycopg's own options "
    '(DATABASES OPTIONS "prepare_threshold"), see the deployment docs.',
}


class UserGroupsSettings:
    """Attribute access to ``settings.USERGROUPS``, with the defaults of :data:`SETTINGS`."""

    @property
    def given(self) -> Any:
        """``USERGROUPS`` as the project wrote it: not a dict is check usergroups.E007's."""
        return getattr(settings, "USERGROUPS", {})

    def __getattr__(self, name: str) -> Any:
        if name not in SETTINGS:
            raise AttributeError(f"Unknown USERGROUPS setting: {name!r}")
        given, default = self.given, SETTINGS[name].default
        return given.get(name, default) if isinstance(given, dict) else default


usergroups_settings = UserGroupsSettings()

"""System checks: misconfigurations caught at startup, with stable IDs and a hint each."""

import re
from collections.abc import Sequence
from typing import Any

import django
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.core.exceptions import ImproperlyConfigured

from usergroups.conf import DEFAULTS, REMOVED
from usergroups.crypto import token_secrets
from usergroups.embed.keys import SigningKeyError, given_key
from usergroups.read_model import looks_pooled

MIN_SECRET_LENGTH = 32

# Setting -> smallest value allowed.
_INTEGER_SETTINGS = {
    "ROTATION_GRACE_SECONDS": 0,
    "MAX_BODY_BYTES": 1,
    "MAX_PROPERTIES_BYTES": 1,
    "MAX_PROPERTIES_DEPTH": 1,
    "MAX_MAPPING_ENTRIES": 0,
    "MAX_HIERARCHY_DEPTH": 1,
    "KEY_LAST_USED_INTERVAL_SECONDS": 0,
    "EMBED_TOKEN_SECONDS": 30,
    "EMBED_TOKEN_MAX_SECONDS": 30,
    "AUDIT_RETENTION_DAYS": 1,
    "WEBHOOK_MAX_ATTEMPTS": 1,
    "WEBHOOK_DISABLE_AFTER_FAILURES": 1,
    "READ_MODEL_MAX_ENTRIES": 100,
}
# Setting -> (smallest, largest) number of seconds allowed (int or float, above 0).
_SECONDS_SETTINGS = {
    "WEBHOOK_CONNECT_TIMEOUT_SECONDS": (0, None),
    "WEBHOOK_TIMEOUT_SECONDS": (0, None),
    # The contract's first retry comes within 15 seconds.
    "WEBHOOK_RETRY_BASE_SECONDS": (0, 15),
    "WEBHOOK_RETRY_MAX_SECONDS": (0, None),
    "WEBHOOK_LEASE_SECONDS": (0, None),
}
# The oldest Django REST framework that works with usergroups on each Django release, the
# last row at or below the installed Django applying. DRF before 3.18 cannot import its
# views on Django 6.1 (django.utils.cache.cc_delim_re is gone); 3.18 is also the floor
# pyproject.toml declares, proven on Django 5.2.0 by tox's `lowest` env.
DRF_FLOORS = (
    ((5, 2), (3, 18)),
    ((6, 1), (3, 18)),
)
_PER_PROCESS_CACHES = (
    "django.core.cache.backends.locmem.LocMemCache",
    "django.core.cache.backends.dummy.DummyCache",
)


@register(Tags.compatibility)
def check_installed_apps(app_configs: Any, **kwargs: Any) -> Sequence[CheckMessage]:
    if "rest_framework" in settings.INSTALLED_APPS:
        return []
    return [
        Error(
            "usergroups needs Django REST framework.",
            hint='Add "rest_framework" to INSTALLED_APPS.',
            id="usergroups.E001",
        )
    ]


def _major_minor(version: str) -> tuple[int, int] | None:
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match[1]), int(match[2])) if match else None


@register(Tags.compatibility)
def check_rest_framework_version(app_configs: Any = None, **kwargs: Any) -> Sequence[CheckMessage]:
    """DRF older than the installed Django supports: pip allows it (``--no-deps``, a pin
    elsewhere, an upgrade of Django alone) and the failure it causes names neither."""
    try:
        import rest_framework
    except ImportError:  # not installed at all: E001's business, and import errors say it
        return []
    drf = _major_minor(getattr(rest_framework, "VERSION", ""))
    floors = [
        drf_floor
        for django_release, drf_floor in DRF_FLOORS
        if django.VERSION[:2] >= django_release
    ]
    if drf is None or not floors or drf >= floors[-1]:
        return []
    needed = ".".join(map(str, floors[-1]))
    return [
        Error(
            f"Django REST framework {rest_framework.VERSION} is too old for Django "
            f"{django.get_version()}: usergroups needs djangorestframework>={needed} with it.",
            hint=f'Upgrade it: pip install "djangorestframework>={needed}".',
            id="usergroups.E010",
        )
    ]


@register(Tags.compatibility)
def check_usergroups_setting(app_configs: Any, **kwargs: Any) -> Sequence[CheckMessage]:
    options = getattr(settings, "USERGROUPS", {})
    if not isinstance(options, dict):
        return [
            Error(
                f"USERGROUPS must be a dict, not {type(options).__name__}.",
                hint='Write it as USERGROUPS = {"THROTTLE_RATE": "600/minute", ...}.',
                id="usergroups.E007",
            )
        ]
    errors: list[CheckMessage] = [
        Error(
            f"Unknown USERGROUPS setting {name!r}.",
            hint=f"Known settings: {', '.join(sorted(DEFAULTS))}.",
            id="usergroups.E002",
        )
        for name in sorted(set(options) - set(DEFAULTS) - set(REMOVED))
    ]
    errors += [
        Warning(
            f"USERGROUPS setting {name!r} was removed and has no effect.",
            hint=f"Remove it. {REMOVED[name]}",
            id="usergroups.W003",
        )
        for name in sorted(set(options) & set(REMOVED))
    ]
    for name, minimum in _INTEGER_SETTINGS.items():
        value = options.get(name, DEFAULTS[name])
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            errors.append(
                Error(
                    f"USERGROUPS[{name!r}] must be an integer of at least {minimum}.",
                    hint=f"The default is {DEFAULTS[name]}.",
                    id="usergroups.E003",
                )
            )
    return errors


@register(Tags.security)
def check_token_secret(app_configs: Any, **kwargs: Any) -> Sequence[CheckMessage]:
    try:
        secret = token_secrets()[0]
    except ImproperlyConfigured:  # an empty SECRET_KEY
        secret = ""
    if isinstance(secret, str | bytes) and len(secret) >= MIN_SECRET_LENGTH:
        return []
    return [
        Error(
            f"The secret that seals group tokens is missing or shorter than "
            f"{MIN_SECRET_LENGTH} characters.",
            hint='Set a long random SECRET_KEY, or USERGROUPS["TOKEN_SECRET"].',
            id="usergroups.E004",
        )
    ]


@register(Tags.compatibility)
def check_throttling(app_configs: Any, **kwargs: Any) -> Sequence[CheckMessage]:
    options = getattr(settings, "USERGROUPS", {})
    rate = options.get("THROTTLE_RATE") if isinstance(options, dict) else None
    if not rate:
        return []
    alias = options.get("THROTTLE_CACHE", DEFAULTS["THROTTLE_CACHE"])
    try:
        count, period = rate.split("/")
        valid = int(count) > 0 and period[:1] in {"s", "m", "h", "d"}
    except (AttributeError, ValueError):
        valid = False
    if not valid:
        return [
            Error(
                f"USERGROUPS['THROTTLE_RATE'] {rate!r} is not a rate.",
                hint='Write it as DRF does: "100/minute", "10/second", "5000/day".',
                id="usergroups.E005",
            )
        ]
    if alias not in settings.CACHES:
        return [
            Error(
                f"USERGROUPS['THROTTLE_CACHE'] names {alias!r}, which is not in CACHES.",
                hint=f"Name one of the CACHES aliases: {', '.join(sorted(settings.CACHES))}.",
                id="usergroups.E006",
            )
        ]
    if settings.CACHES[alias]["BACKEND"] in _PER_PROCESS_CACHES:
        return [
            Warning(
                f"Throttling counts in the per-process cache {alias!r}.",
                hint="Each server process keeps its own count, so the real limit is the "
                "rate times the number of processes. Use a shared cache such as Redis.",
                id="usergroups.W002",
            )
        ]
    return []


@register(Tags.compatibility)
def check_sqlite_concurrency(app_configs: Any, **kwargs: Any) -> Sequence[CheckMessage]:
    # With DEBUG on, the site is a developer's: one runserver process, where the default
    # SQLite settings are fine. A fresh startproject site is that, and must start quiet.
    if settings.DEBUG:
        return []
    warnings = []
    for alias, config in settings.DATABASES.items():
        if config.get("ENGINE") != "django.db.backends.sqlite3":
            continue
        options = config.get("OPTIONS", {})
        if options.get("transaction_mode") != "IMMEDIATE" or "timeout" not in options:
            warnings.append(
                Warning(
                    f"SQLite database {alias!r} is not set up for several server processes.",
                    hint='Set OPTIONS {"transaction_mode": "IMMEDIATE", "timeout": 20}: '
                    'without them concurrent writes fail with "database is locked". '
                    "Silence this if a single process uses the database.",
                    id="usergroups.W001",
                )
            )
    return warnings


@register(Tags.security)
def check_embed_signing_key(app_configs: Any, **kwargs: Any) -> Sequence[CheckMessage]:
    """A given signing key must load: else every mint and verification would fail."""
    options = getattr(settings, "USERGROUPS", {})
    pem = options.get("EMBED_SIGNING_KEY") if isinstance(options, dict) else None
    if pem is None:
        return []
    problem = None
    if not isinstance(pem, str | bytes) or not pem:
        problem = f"a {type(pem).__name__}"
    else:
        try:
            given_key(pem)
        except SigningKeyError as exc:
            problem = str(exc)
    if problem is None:
        return []
    return [
        Error(
            f'USERGROUPS["EMBED_SIGNING_KEY"] is not a usable signing key: {problem}.',
            hint="Give a PEM private key (Ed25519, or EC P-256), unencrypted, or None to "
            "derive one from the token secret.",
            id="usergroups.E008",
        )
    ]


@register(Tags.compatibility)
def check_embed_settings(app_configs: Any, **kwargs: Any) -> Sequence[CheckMessage]:
    """The embed-token settings the integer check (E003) does not cover."""
    options = getattr(settings, "USERGROUPS", {})
    if not isinstance(options, dict):
        return []  # E007
    errors = []
    for name in ("EMBED_TOKEN_AUDIENCE", "EMBED_TOKEN_ISSUER"):
        value = options.get(name, DEFAULTS[name])
        if not isinstance(value, str) or not value:
            errors.append(_embed_error(f"USERGROUPS[{name!r}] must be a non-empty string."))
    for name in ("EMBED_ACCEPT_GROUP_TOKENS", "EMBED_REQUIRE_ORIGIN"):
        if not isinstance(options.get(name, DEFAULTS[name]), bool):
            errors.append(_embed_error(f"USERGROUPS[{name!r}] must be True or False."))
    default = options.get("EMBED_TOKEN_SECONDS", DEFAULTS["EMBED_TOKEN_SECONDS"])
    longest = options.get("EMBED_TOKEN_MAX_SECONDS", DEFAULTS["EMBED_TOKEN_MAX_SECONDS"])
    if isinstance(default, int) and isinstance(longest, int) and default > longest:
        errors.append(
            _embed_error(
                "USERGROUPS['EMBED_TOKEN_SECONDS'] must not exceed "
                "USERGROUPS['EMBED_TOKEN_MAX_SECONDS']."
            )
        )
    return errors


@register(Tags.security, deploy=True)
def check_embed_require_origin(app_configs: Any, **kwargs: Any) -> Sequence[CheckMessage]:
    """``check --deploy``: a token minted without ``origin`` works from any web page."""
    options = getattr(settings, "USERGROUPS", {})
    if not isinstance(options, dict) or options.get("EMBED_REQUIRE_ORIGIN") is True:
        return []
    return [
        Warning(
            "Embed tokens minted without an origin are accepted from any origin.",
            hint='Set USERGROUPS["EMBED_REQUIRE_ORIGIN"] = True once every mint sends '
            '"origin", so a stolen token cannot be used from another web page.',
            id="usergroups.W004",
        )
    ]


def _embed_error(message: str) -> Error:
    return Error(message, hint="See the embed-token settings in the docs.", id="usergroups.E009")


@register(Tags.compatibility)
def check_webhook_settings(app_configs: Any, **kwargs: Any) -> Sequence[CheckMessage]:
    """The webhook settings the integer check (E003) does not cover."""
    options = getattr(settings, "USERGROUPS", {})
    if not isinstance(options, dict):
        return []  # E007
    problems = []
    if not isinstance(options.get("WEBHOOK_ALLOW_PRIVATE", False), bool):
        problems.append("USERGROUPS['WEBHOOK_ALLOW_PRIVATE'] must be True or False.")
    for name, (above, most) in _SECONDS_SETTINGS.items():
        value = options.get(name, DEFAULTS[name])
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or value <= above or (most is not None and value > most):
            bound = f" and at most {most}" if most is not None else ""
            problems.append(f"USERGROUPS[{name!r}] must be a number of seconds above 0{bound}.")
    connect, timeout, lease = (
        options.get(name, DEFAULTS[name])
        for name in (
            "WEBHOOK_CONNECT_TIMEOUT_SECONDS",
            "WEBHOOK_TIMEOUT_SECONDS",
            "WEBHOOK_LEASE_SECONDS",
        )
    )
    numbers = all(type(value) in (int, float) for value in (connect, timeout, lease))
    if numbers and lease <= connect + timeout:
        # A send still going when its lease ends could be sent again beside it.
        problems.append(
            "USERGROUPS['WEBHOOK_LEASE_SECONDS'] must be above WEBHOOK_CONNECT_TIMEOUT_SECONDS "
            "+ WEBHOOK_TIMEOUT_SECONDS."
        )
    backend = options.get("WEBHOOK_TASK_BACKEND", DEFAULTS["WEBHOOK_TASK_BACKEND"])
    if not isinstance(backend, str) or not backend:
        problems.append("USERGROUPS['WEBHOOK_TASK_BACKEND'] must name a TASKS backend.")
    return [
        Error(message, hint="See the webhook settings in docs/webhooks.md.", id="usergroups.E011")
        for message in problems
    ]


@register(Tags.compatibility)
def check_read_model(app_configs: Any, **kwargs: Any) -> Sequence[CheckMessage]:
    """The read model's settings (CONTRACT section 9), and whether listening can work."""
    options = getattr(settings, "USERGROUPS", {})
    if not isinstance(options, dict):
        return []  # E007
    setting = options.get("READ_MODEL", DEFAULTS["READ_MODEL"])
    alias = options.get("LISTEN_DATABASE", DEFAULTS["LISTEN_DATABASE"])
    problems = []
    if setting not in ("auto", True, False) or not isinstance(setting, str | bool):
        problems.append("USERGROUPS['READ_MODEL'] must be \"auto\", True or False.")
    if alias is not None and (not isinstance(alias, str) or alias not in settings.DATABASES):
        problems.append("USERGROUPS['LISTEN_DATABASE'] must name a database of DATABASES.")
    if problems:
        return [
            Error(message, hint="See the read model in docs/settings.md.", id="usergroups.E012")
            for message in problems
        ]
    if setting is False:
        return []
    database = settings.DATABASES.get(alias or "default", {})
    engine = database.get("ENGINE", "")
    if "postgresql" not in engine:
        if setting is True:
            return [
                Warning(
                    "USERGROUPS['READ_MODEL'] is True, but the database is not PostgreSQL:"
                    " every read goes to the database.",
                    hint='Set it to "auto" (the default) or False.',
                    id="usergroups.W005",
                )
            ]
        return []
    if looks_pooled(database, alias):
        return [
            Warning(
                "The default database looks pooled in transaction mode"
                " (DISABLE_SERVER_SIDE_CURSORS), where LISTEN cannot work: every read"
                " goes to the database.",
                hint="Set USERGROUPS['LISTEN_DATABASE'] to an alias with a direct"
                " connection to PostgreSQL (see docs/deployment.md).",
                id="usergroups.W005",
            )
        ]
    return []

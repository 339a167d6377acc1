"""System checks: misconfigurations caught at startup, with stable IDs and a hint each."""

import re
from collections.abc import Sequence
from typing import Any

import django
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.core.exceptions import ImproperlyConfigured

from usergroups import read_model
from usergroups.conf import REMOVED, SETTINGS, usergroups_settings
from usergroups.crypto import token_secrets
from usergroups.embed.keys import SigningKeyError, given_key
from usergroups.read_model import looks_pooled

MIN_SECRET_LENGTH = 32

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
    options = usergroups_settings.given
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
            hint=f"Known settings: {', '.join(sorted(SETTINGS))}.",
            id="usergroups.E002",
        )
        for name in sorted(set(options) - set(SETTINGS) - set(REMOVED))
    ]
    errors += [
        Warning(
            f"USERGROUPS setting {name!r} was removed and has no effect.",
            hint=f"Remove it. {REMOVED[name]}",
            id="usergroups.W003",
        )
        for name in sorted(set(options) & set(REMOVED))
    ]
    return errors + _refused(id="usergroups.E003", hint="The default is {default}.")


def _refused(id: str, hint: str) -> list[CheckMessage]:
    """Check ``id``'s error for each setting it reports whose value the spec's ``takes``
    refuses; ``{default}`` in the hint stands for the setting's default."""
    errors: list[CheckMessage] = []
    for name, setting in SETTINGS.items():
        value = getattr(usergroups_settings, name)
        if setting.takes.check == id and not setting.takes.test(value):
            message = f"USERGROUPS[{name!r}] {setting.takes.says.format(value=value)}."
            errors.append(Error(message, hint=hint.format(default=setting.default), id=id))
    return errors


def _taken(*names: str) -> bool:
    """Whether each of these settings has a value it takes (else its own check says so)."""
    return all(SETTINGS[name].takes.test(getattr(usergroups_settings, name)) for name in names)


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
    errors = _refused(
        id="usergroups.E005", hint='Write it as DRF does: "100/minute", "10/second", "5000/day".'
    )
    if errors or not usergroups_settings.THROTTLE_RATE:
        return errors
    alias = usergroups_settings.THROTTLE_CACHE
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
    pem = usergroups_settings.EMBED_SIGNING_KEY
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
    hint = "See the embed-token settings in the docs."
    errors = _refused(id="usergroups.E009", hint=hint)
    lifetimes = ("EMBED_TOKEN_SECONDS", "EMBED_TOKEN_MAX_SECONDS")
    default, longest = (getattr(usergroups_settings, name) for name in lifetimes)
    if _taken(*lifetimes) and default > longest:
        errors.append(
            Error(
                "USERGROUPS['EMBED_TOKEN_SECONDS'] must not exceed "
                "USERGROUPS['EMBED_TOKEN_MAX_SECONDS'].",
                hint=hint,
                id="usergroups.E009",
            )
        )
    return errors


@register(Tags.security, deploy=True)
def check_embed_require_origin(app_configs: Any, **kwargs: Any) -> Sequence[CheckMessage]:
    """``check --deploy``: a token minted without ``origin`` works from any web page."""
    if usergroups_settings.EMBED_REQUIRE_ORIGIN is True:
        return []
    if not isinstance(usergroups_settings.given, dict):  # E007 says enough
        return []
    return [
        Warning(
            "Embed tokens minted without an origin are accepted from any origin.",
            hint='Set USERGROUPS["EMBED_REQUIRE_ORIGIN"] = True once every mint sends '
            '"origin", so a stolen token cannot be used from another web page.',
            id="usergroups.W004",
        )
    ]


@register(Tags.compatibility)
def check_webhook_settings(app_configs: Any, **kwargs: Any) -> Sequence[CheckMessage]:
    """The webhook settings the integer check (E003) does not cover."""
    hint = "See the webhook settings in docs/webhooks.md."
    errors = _refused(id="usergroups.E011", hint=hint)
    times = ("WEBHOOK_CONNECT_TIMEOUT_SECONDS", "WEBHOOK_TIMEOUT_SECONDS", "WEBHOOK_LEASE_SECONDS")
    connect, timeout, lease = (getattr(usergroups_settings, name) for name in times)
    if _taken(*times) and lease <= connect + timeout:
        # A send still going when its lease ends could be sent again beside it.
        errors.append(
            Error(
                "USERGROUPS['WEBHOOK_LEASE_SECONDS'] must be above "
                "WEBHOOK_CONNECT_TIMEOUT_SECONDS + WEBHOOK_TIMEOUT_SECONDS.",
                hint=hint,
                id="usergroups.E011",
            )
        )
    return errors


@register(Tags.compatibility)
def check_read_model(app_configs: Any, **kwargs: Any) -> Sequence[CheckMessage]:
    """The read model's settings (CONTRACT section 9), and whether listening can work."""
    errors = _refused(id="usergroups.E012", hint="See the read model in docs/settings.md.")
    setting, alias = usergroups_settings.READ_MODEL, usergroups_settings.LISTEN_DATABASE
    if errors or setting is False:
        return errors
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


@register(Tags.database)
def check_listening_connection(
    app_configs: Any, databases: Sequence[str] | None = None, **kwargs: Any
) -> Sequence[CheckMessage]:
    """With ``check --database``: whether a listening connection would reach PostgreSQL
    itself (CONTRACT 9a). Through a pooler in transaction mode the server's process id
    is not the one the connection was told; memory is then never trusted."""
    if not databases or not read_model.enabled():
        return []
    try:
        with read_model.connect("usergroups-check") as connection:
            server_pid = connection.execute("SELECT pg_backend_pid()").fetchone()[0]
            direct = server_pid == connection.info.backend_pid
    except Exception as error:  # the database check of Django reports what it cannot reach
        return [
            Warning(
                f"The read model cannot connect to listen ({type(error).__name__}): every"
                " read goes to the database.",
                hint="See the read model in docs/deployment.md.",
                id="usergroups.W006",
            )
        ]
    if direct:
        return []
    return [
        Warning(
            "The read model's listening database is reached through a pooler in"
            " transaction mode: memory is never trusted there, and every read goes to"
            " the database.",
            hint="Set USERGROUPS['LISTEN_DATABASE'] to an alias with a direct connection"
            " to PostgreSQL (see docs/deployment.md).",
            id="usergroups.W006",
        )
    ]


@register(Tags.compatibility)
def check_telemetry_settings(app_configs: Any, **kwargs: Any) -> Sequence[CheckMessage]:
    """The telemetry settings (docs/observability.md)."""
    return _refused(id="usergroups.E013", hint="See docs/observability.md.")

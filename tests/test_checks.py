"""System checks, run as Django runs them: ``run_checks()`` under ``override_settings``."""

import importlib.util
import re
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from django.conf import settings
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

import usergroups.checks
from usergroups.conf import SETTINGS, usergroups_settings

SQLITE_OK = {"transaction_mode": "IMMEDIATE", "timeout": 20}


def ids(**overrides) -> set[str]:
    with override_settings(**overrides):
        return {m.id for m in run_checks(databases=[]) if m.id.startswith("usergroups.")}


def sqlite(options):
    return {"default": {**settings.DATABASES["default"], "OPTIONS": options}}


def test_project_settings_pass():
    assert ids() == set()


def test_e001_rest_framework_missing():
    apps = [app for app in settings.INSTALLED_APPS if app != "rest_framework"]
    assert "usergroups.E001" in ids(INSTALLED_APPS=apps)


@pytest.mark.parametrize("value", [{"MAX_BODY_BYTE": 1}, {"THROTLE_RATE": "1/s"}])
def test_e002_unknown_setting(value):
    assert ids(USERGROUPS=value) == {"usergroups.E002"}


@pytest.mark.parametrize("value", [True, False])
def test_w003_a_removed_setting_is_a_warning_not_an_error(value):
    """0.2's PREPARED_STATEMENTS, still in a host's settings, must not stop the site."""
    with override_settings(USERGROUPS={"PREPARED_STATEMENTS": value}):
        (message,) = [m for m in run_checks(databases=[]) if m.id.startswith("usergroups.")]
        assert not message.is_serious()
        assert usergroups_settings.MAX_BODY_BYTES == 1024 * 1024  # the rest reads as ever
    assert message.id == "usergroups.W003"
    assert "PREPARED_STATEMENTS" in message.msg and "prepare_threshold" in message.hint


def test_e007_not_a_dict():
    assert ids(USERGROUPS=["ROTATION_GRACE_SECONDS"]) == {"usergroups.E007"}


@pytest.mark.parametrize(
    "value",
    [
        {"MAX_BODY_BYTES": 0},
        {"ROTATION_GRACE_SECONDS": -1},
        {"MAX_PROPERTIES_DEPTH": "32"},
        {"KEY_LAST_USED_INTERVAL_SECONDS": True},
    ],
)
def test_e003_bad_integer(value):
    assert ids(USERGROUPS=value) == {"usergroups.E003"}


def test_e004_short_secret_key():
    assert "usergroups.E004" in ids(SECRET_KEY="too-short")


def test_e004_short_token_secret_even_with_good_secret_key():
    assert ids(USERGROUPS={"TOKEN_SECRET": "short"}) == {"usergroups.E004"}


def test_e004_long_token_secret_passes():
    assert ids(USERGROUPS={"TOKEN_SECRET": "t" * 50}) == set()


@pytest.mark.parametrize("rate", ["fast", "10/fortnight", "0/minute", "x/minute", 10])
def test_e005_bad_rate(rate):
    assert ids(USERGROUPS={"THROTTLE_RATE": rate}) == {"usergroups.E005"}


def test_e006_unknown_cache():
    options = {"THROTTLE_RATE": "10/minute", "THROTTLE_CACHE": "nope"}
    assert ids(USERGROUPS=options) == {"usergroups.E006"}


def test_w002_throttling_on_per_process_cache():
    assert ids(USERGROUPS={"THROTTLE_RATE": "10/minute"}) == {"usergroups.W002"}


def test_throttling_on_shared_cache_passes():
    caches = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache"}}
    assert ids(CACHES=caches, USERGROUPS={"THROTTLE_RATE": "10/minute"}) == set()


no_database_override_warning = pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")


@no_database_override_warning
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"timeout": 20},
        {"transaction_mode": "IMMEDIATE"},
        {"transaction_mode": "DEFERRED", "timeout": 20},
    ],
)
def test_w001_sqlite_not_ready_for_several_processes(options):
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3":
        databases = {
            "default": {
                "ENGINE": "django.db.backends.sqlite3",
                "NAME": ":memory:",
                "OPTIONS": options,
            }
        }
    else:
        databases = sqlite(options)
    assert ids(DATABASES=databases) == {"usergroups.W001"}


@no_database_override_warning
def test_w001_quiet_when_sqlite_is_configured():
    databases = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": ":memory:",
            "OPTIONS": SQLITE_OK,
        }
    }
    assert ids(DATABASES=databases) == set()


def test_every_message_has_a_hint_or_says_enough():
    with override_settings(USERGROUPS={"FOO": 1, "THROTTLE_RATE": "x"}, SECRET_KEY="s"):
        messages = [m for m in run_checks(databases=[]) if m.id.startswith("usergroups.")]
    assert {m.id for m in messages} == {"usergroups.E002", "usergroups.E004", "usergroups.E005"}
    assert all(m.hint for m in messages)


# One id per problem ----------------------------------------------------------------------

CHECKS_SOURCE = Path(usergroups.checks.__file__).read_text()
CHECKS_PAGE = (Path(__file__).resolve().parent.parent / "docs" / "checks.md").read_text()
SQLITE_UNSET = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
# Each problem the checks know, and settings that cause it alone.
PROBLEMS = {
    "rest_framework missing": {
        "INSTALLED_APPS": [app for app in settings.INSTALLED_APPS if app != "rest_framework"]
    },
    "USERGROUPS not a dict": {"USERGROUPS": ["ROTATION_GRACE_SECONDS"]},
    "unknown setting": {"USERGROUPS": {"MAX_BODY_BYTE": 1}},
    "removed setting": {"USERGROUPS": {"PREPARED_STATEMENTS": False}},
    "bad integer": {"USERGROUPS": {"MAX_BODY_BYTES": 0}},
    "short secret": {"USERGROUPS": {"TOKEN_SECRET": "short"}},
    "bad rate": {"USERGROUPS": {"THROTTLE_RATE": "fast"}},
    "unknown cache": {"USERGROUPS": {"THROTTLE_RATE": "1/s", "THROTTLE_CACHE": "nope"}},
    "per-process cache": {"USERGROUPS": {"THROTTLE_RATE": "1/s"}},
    "sqlite not ready": {"DATABASES": SQLITE_UNSET},
    "bad embed signing key": {"USERGROUPS": {"EMBED_SIGNING_KEY": "not a key"}},
    "bad embed setting": {"USERGROUPS": {"EMBED_TOKEN_AUDIENCE": ""}},
    "bad webhook setting": {"USERGROUPS": {"WEBHOOK_TIMEOUT_SECONDS": 0}},
    "bad read model setting": {"USERGROUPS": {"READ_MODEL": "yes"}},
    "bad telemetry setting": {"USERGROUPS": {"TELEMETRY_WORKSPACE": 1}},
    "read model that cannot listen": {
        "DATABASES": {
            "default": {
                "ENGINE": "django.db.backends.postgresql",
                "NAME": "pooled",
                "DISABLE_SERVER_SIDE_CURSORS": True,
            }
        }
    },
}


@no_database_override_warning
def test_each_problem_has_its_own_id_with_a_hint(installed):
    seen = {}

    def record(problem: str, deploy: bool = False) -> None:
        everything = run_checks(databases=[], include_deployment_checks=deploy)
        messages = [m for m in everything if m.id.startswith("usergroups.")]
        assert len({m.id for m in messages}) == 1, (problem, messages)
        assert all(m.hint for m in messages), (problem, messages)
        seen[problem] = messages[0].id

    for problem, overrides in PROBLEMS.items():
        with override_settings(**overrides):
            record(problem)
    with override_settings(USERGROUPS={}):
        record("embed tokens without origin accepted (check --deploy)", deploy=True)
    installed((6, 1, 0, "final", 0), "3.17.2")  # the one problem that is not a setting
    record("rest_framework too old for Django")
    assert len(set(seen.values())) == len(PROBLEMS) + 2, seen
    # Every id the module can emit is one of these problems, and the checks page lists each;
    # W006 connects to the database (check --database): tests/test_read_model.py has it.
    emitted = set(re.findall(r'id="(usergroups\.[EW]\d{3})"', CHECKS_SOURCE))
    assert emitted == set(seen.values()) | {"usergroups.W006"}
    documented = set(re.findall(r"^\| `(usergroups\.[EW]\d{3})` \|", CHECKS_PAGE, re.MULTILINE))
    assert documented == emitted


@no_database_override_warning
def test_w001_quiet_under_debug():
    """A fresh ``startproject`` site (DEBUG on, bare SQLite) migrates without W001."""
    databases = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
    assert ids(DATABASES=databases, DEBUG=True) == set()
    assert ids(DATABASES=databases, DEBUG=False) == {"usergroups.W001"}


POSTGRESQL = {"ENGINE": "django.db.backends.postgresql", "NAME": "site"}
SQLITE_READY = {"ENGINE": "django.db.backends.sqlite3", "NAME": "site", "OPTIONS": SQLITE_OK}


# Settings alone decide W005: whatever database DATABASE_URL gives this run.
@no_database_override_warning
@pytest.mark.parametrize(
    ("database", "read_model", "expected"),
    [
        (POSTGRESQL, "auto", set()),  # a direct connection: the read model listens
        (POSTGRESQL, True, set()),
        ({**POSTGRESQL, "DISABLE_SERVER_SIDE_CURSORS": True}, "auto", {"usergroups.W005"}),
        (SQLITE_READY, True, {"usergroups.W005"}),
        (SQLITE_READY, "auto", set()),
    ],
    ids=["postgresql", "postgresql-true", "pooled", "sqlite-true", "sqlite"],
)
def test_w005_only_where_the_read_model_cannot_listen(database, read_model, expected):
    given = {"DATABASES": {"default": database}, "USERGROUPS": {"READ_MODEL": read_model}}
    assert ids(**given) == expected


# E010 reads django.VERSION and rest_framework.VERSION, the installed releases: setting
# them stands in for installing another pair (the lowest/newest tox envs install real ones).
@pytest.fixture
def installed(monkeypatch):
    import django
    import rest_framework

    def install(django_version: tuple, drf_version: str) -> None:
        monkeypatch.setattr(django, "VERSION", django_version)
        monkeypatch.setattr(rest_framework, "VERSION", drf_version)

    return install


@pytest.mark.parametrize(
    ("django_version", "drf_version"),
    [
        ((6, 1, 0, "final", 0), "3.17.2"),  # fails at URL import: cc_delim_re is gone
        ((6, 2, 0, "alpha", 0), "3.15.2"),
        ((5, 2, 0, "final", 0), "3.16.1"),  # below the declared floor
    ],
)
def test_e010_rest_framework_too_old_for_django(installed, django_version, drf_version):
    installed(django_version, drf_version)
    errors = [m for m in run_checks(databases=[]) if m.id == "usergroups.E010"]
    assert len(errors) == 1
    assert f"Django REST framework {drf_version} is too old for Django" in errors[0].msg
    assert errors[0].hint == 'Upgrade it: pip install "djangorestframework>=3.18".'


@pytest.mark.parametrize(
    ("django_version", "drf_version"),
    [
        ((6, 1, 3, "final", 0), "3.18.0"),
        ((5, 2, 0, "final", 0), "3.18.0"),
        ((6, 1, 0, "final", 0), "3.19.0a1"),
    ],
)
def test_e010_quiet_when_rest_framework_is_new_enough(installed, django_version, drf_version):
    installed(django_version, drf_version)
    assert ids() == set()


def test_e010_quiet_on_the_installed_pair():
    """The pair this run really has: each tox env and .ci/run pass installs one."""
    from usergroups.checks import check_rest_framework_version

    assert check_rest_framework_version() == []


def test_e010_named_by_the_url_import_an_old_drf_would_break(installed):
    """``check`` and ``migrate`` import the URLconf, where an old DRF fails on its own
    ImportError before E010 could be listed: the URLconf says E010's fix instead."""
    installed((6, 1, 0, "final", 0), "3.17.2")
    spec = importlib.util.find_spec("usergroups.urls")
    fresh = importlib.util.module_from_spec(spec)  # not the site's loaded URLconf
    with pytest.raises(ImproperlyConfigured) as raised:
        spec.loader.exec_module(fresh)
    assert 'pip install "djangorestframework>=3.18"' in str(raised.value)
    assert "usergroups.E010" in str(raised.value)


# Embed tokens ------------------------------------------------------------------------------


def _pem(private_key) -> str:
    return private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


@pytest.mark.parametrize(
    "make",
    [lambda: ed25519.Ed25519PrivateKey.generate(), lambda: ec.generate_private_key(ec.SECP256R1())],
)
def test_e008_quiet_for_good_signing_keys(make):
    assert ids(USERGROUPS={"EMBED_SIGNING_KEY": _pem(make())}) == set()


@pytest.mark.parametrize(
    "value",
    [
        "not a key",
        42,
        lambda: _pem(ec.generate_private_key(ec.SECP384R1())),
        lambda: _pem(rsa.generate_private_key(public_exponent=65537, key_size=2048)),
        lambda: (
            ed25519.Ed25519PrivateKey.generate()
            .public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode()
        ),
        lambda: (
            ed25519.Ed25519PrivateKey.generate()
            .private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.BestAvailableEncryption(b"password"),
            )
            .decode()
        ),
    ],
)
def test_e008_bad_signing_key(value):
    value = value() if callable(value) else value
    assert ids(USERGROUPS={"EMBED_SIGNING_KEY": value}) == {"usergroups.E008"}


@pytest.mark.parametrize(
    "value",
    [
        {"EMBED_TOKEN_AUDIENCE": ""},
        {"EMBED_TOKEN_AUDIENCE": ["a", "b"]},
        {"EMBED_TOKEN_ISSUER": None},
        {"EMBED_ACCEPT_GROUP_TOKENS": "no"},
        {"EMBED_TOKEN_SECONDS": 900, "EMBED_TOKEN_MAX_SECONDS": 600},
    ],
)
def test_e009_bad_embed_setting(value):
    assert ids(USERGROUPS=value) == {"usergroups.E009"}


@pytest.mark.parametrize(
    "value",
    [
        {"EMBED_TOKEN_SECONDS": 29},
        {"EMBED_TOKEN_MAX_SECONDS": "3600"},
        {"EMBED_TOKEN_SECONDS": 1.5},
    ],
)
def test_e003_bad_embed_lifetime(value):
    assert ids(USERGROUPS=value) == {"usergroups.E003"}


@pytest.mark.parametrize("value", [0, -1, "365", 1.5, True, None])
def test_e003_bad_audit_retention(value):
    assert ids(USERGROUPS={"AUDIT_RETENTION_DAYS": value}) == {"usergroups.E003"}


# Values each setting takes, from usergroups.conf.SETTINGS -----------------------------------


@pytest.mark.parametrize(
    ("given", "check_id", "message", "hint"),
    [
        (
            {"MAX_BODY_BYTES": 0},
            "usergroups.E003",
            "USERGROUPS['MAX_BODY_BYTES'] must be an integer of at least 1.",
            "The default is 1048576.",
        ),
        (
            {"THROTTLE_RATE": "1/fortnight"},
            "usergroups.E005",
            "USERGROUPS['THROTTLE_RATE'] '1/fortnight' is not a rate.",
            'Write it as DRF does: "100/minute", "10/second", "5000/day".',
        ),
        (
            {"EMBED_TOKEN_ISSUER": ""},
            "usergroups.E009",
            "USERGROUPS['EMBED_TOKEN_ISSUER'] must be a non-empty string.",
            "See the embed-token settings in the docs.",
        ),
        (
            {"EMBED_REQUIRE_ORIGIN": "yes"},
            "usergroups.E009",
            "USERGROUPS['EMBED_REQUIRE_ORIGIN'] must be True or False.",
            "See the embed-token settings in the docs.",
        ),
        (
            {"WEBHOOK_RETRY_BASE_SECONDS": 16},
            "usergroups.E011",
            "USERGROUPS['WEBHOOK_RETRY_BASE_SECONDS'] must be a number of seconds above 0 and "
            "at most 15.",
            "See the webhook settings in docs/webhooks.md.",
        ),
        (
            {"WEBHOOK_TASK_BACKEND": ""},
            "usergroups.E011",
            "USERGROUPS['WEBHOOK_TASK_BACKEND'] must name a TASKS backend.",
            "See the webhook settings in docs/webhooks.md.",
        ),
        (
            {"READ_MODEL": 1},
            "usergroups.E012",
            "USERGROUPS['READ_MODEL'] must be \"auto\", True or False.",
            "See the read model in docs/settings.md.",
        ),
        (
            {"LISTEN_DATABASE": "nowhere"},
            "usergroups.E012",
            "USERGROUPS['LISTEN_DATABASE'] must name a database of DATABASES.",
            "See the read model in docs/settings.md.",
        ),
        (
            {"TELEMETRY_WORKSPACE": "yes"},
            "usergroups.E013",
            "USERGROUPS['TELEMETRY_WORKSPACE'] must be True or False.",
            "See docs/observability.md.",
        ),
    ],
)
def test_a_bad_value_of_each_kind_is_reported_by_its_check(given, check_id, message, hint):
    """Each kind of value the spec knows, refused with the id, message and hint that
    docs/checks.md shows."""
    with override_settings(USERGROUPS=given):
        (error,) = [m for m in run_checks(databases=[]) if m.id.startswith("usergroups.")]
    assert (error.id, error.msg, error.hint) == (check_id, message, hint)


#: Values some setting does not take: each setting the spec checks refuses some of them.
REFUSABLE = [object(), -1, 0, 16, "", "nowhere", "1/fortnight", True, None, 1.5, float("nan")]


@pytest.mark.parametrize("name", [name for name, s in SETTINGS.items() if s.takes.check])
def test_every_value_a_setting_does_not_take_is_reported_by_its_check_alone(name):
    takes = SETTINGS[name].takes
    refused = [value for value in REFUSABLE if not takes.test(value)]
    assert refused
    for value in refused:
        assert ids(USERGROUPS={name: value}) == {takes.check}, value

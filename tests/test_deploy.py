"""The example project's production settings pass ``manage.py check --deploy``.

Run in a subprocess, with only the environment a deployment sets: the settings module
reads it at import, so ``override_settings`` could not show what a real start-up does.
"""

import os
import secrets
import string
import subprocess
import sys

import pytest

from tests.support import ROOT

# The characters of Django's get_random_secret_key(), "$" included.
KEY_ALPHABET = string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)"
DEPLOY_CHECK = ["manage.py", "check", "--deploy", "--fail-level", "WARNING"]


def random_secret_key(first: str = "") -> str:
    return first + "".join(secrets.choice(KEY_ALPHABET) for _ in range(50 - len(first)))


def run(args: list[str], **environment: str) -> subprocess.CompletedProcess:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "USERGROUPS_"))
    }
    env.update(DJANGO_SETTINGS_MODULE="example_project.settings", **environment)
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def production(**overrides: str) -> dict[str, str]:
    environment = {
        "DJANGO_DEBUG": "false",
        "DJANGO_HTTPS": "true",
        "DJANGO_SECRET_KEY": random_secret_key(),
        "DJANGO_ALLOWED_HOSTS": "example.com",
    }
    environment.update(overrides)
    return {key: value for key, value in environment.items() if value is not None}


def test_production_settings_pass_the_deploy_check():
    done = run(DEPLOY_CHECK, **production())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_without_https_the_deploy_check_fails():
    done = run(DEPLOY_CHECK, **production(DJANGO_HTTPS=None))
    assert done.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in done.stderr, done.stderr


def test_with_debug_the_deploy_check_fails():
    done = run(DEPLOY_CHECK, **production(DJANGO_DEBUG="true"))
    assert done.returncode != 0
    assert "security.W018" in done.stderr, done.stderr


def test_embed_tokens_without_origin_fail_the_deploy_check():
    done = run(DEPLOY_CHECK, **production(USERGROUPS_EMBED_REQUIRE_ORIGIN="false"))
    assert done.returncode != 0
    assert "usergroups.W004" in done.stderr, done.stderr


@pytest.mark.parametrize(("debug", "required"), [("false", True), ("true", False)])
def test_an_origin_is_required_by_default_in_production_only(debug, required):
    """As WEBHOOK_ALLOW_PRIVATE follows DJANGO_DEBUG: production needs no extra variable
    to pass check --deploy (usergroups.W004), the demo under DEBUG mints either way."""
    show = "from usergroups.conf import usergroups_settings as s; print(s.EMBED_REQUIRE_ORIGIN)"
    done = run(["-c", f"import django; django.setup(); {show}"], **production(DJANGO_DEBUG=debug))
    assert done.stdout.strip() == str(required), done.stderr


def test_a_weak_secret_key_fails_the_deploy_check():
    done = run(DEPLOY_CHECK, **production(DJANGO_SECRET_KEY="short"))
    assert done.returncode != 0
    assert "security.W009" in done.stderr, done.stderr


@pytest.mark.parametrize("name", ["DJANGO_SECRET_KEY", "DJANGO_SECRET_KEY_FALLBACKS"])
def test_secret_keys_are_read_verbatim(name):
    """Django's own keys may start with "$", which django-environ would resolve as the
    name of another variable (here: PATH) instead of taking the key as given."""
    key = random_secret_key(first="$PATH")
    show = (
        "from django.conf import settings;"
        f"print(settings.SECRET_KEY if '{name}' == 'DJANGO_SECRET_KEY'"
        " else ','.join(settings.SECRET_KEY_FALLBACKS))"
    )
    done = run(["-c", f"import django; django.setup(); {show}"], **production(**{name: key}))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == key


@pytest.mark.parametrize("debug", [None, "false"])
def test_a_missing_secret_key_names_the_variables_to_set(debug):
    """Without DJANGO_SECRET_KEY (and without DJANGO_DEBUG=true, which brings a fixed
    development key) a command stops at the system checks, naming both variables."""
    done = run(
        ["manage.py", "create_api_key", "--workspace", "acme"],
        **production(DJANGO_SECRET_KEY=None, DJANGO_DEBUG=debug, DATABASE_URL="sqlite://:memory:"),
    )
    assert done.returncode != 0
    assert done.stdout == ""  # no key was made
    assert "example_project.E001" in done.stderr, done.stderr
    assert "DJANGO_SECRET_KEY" in done.stderr and "DJANGO_DEBUG=true" in done.stderr

"""The example project's production settings pass ``manage.py check --deploy``, and so
does a site of the host's own with the settings block of docs/deployment.md, where
``collectstatic`` gathers embed.js at the path the docs name.

Run in a subprocess, with only the environment a deployment sets: the settings module
reads it at import, so ``override_settings`` could not show what a real start-up does.
"""

import os
import re
import secrets
import string
import subprocess
import sys

import django
import pytest

from tests.docs_examples.pages import fenced_blocks
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


# A site of the host's own (docs/deployment.md, "Your own site's settings").
DEPLOYMENT = ROOT / "docs" / "deployment.md"
# What docs/install.md adds to a startproject site, and a production database: PostgreSQL,
# to which check --deploy and collectstatic open no connection.
INSTALLED = """
INSTALLED_APPS += ["rest_framework", "usergroups"]
DATABASES = {"default": {"ENGINE": "django.db.backends.postgresql", "NAME": "mysite"}}
"""
WITHOUT_THE_BLOCK = {
    *(f"security.W0{n:02}" for n in (4, 8, 9, 12, 16, 18, 20)),
    "usergroups.W004",
    # Django 6.1's startproject sends mail to the console, a deploy check's error.
    *(["mail.E001"] if django.VERSION >= (6, 1) else []),
}


def production_block() -> str:
    """The settings block the docs tell a host to copy, as written there."""
    (block,) = [b for b in fenced_blocks(DEPLOYMENT, "python") if "SECURE_HSTS_SECONDS" in b]
    return block


@pytest.fixture(scope="module")
def own_site(tmp_path_factory):
    """A site of the host's own: ``django-admin startproject mysite``, whose settings.py
    gets ``INSTALLED``, and beside it ``mysite/production.py``: those settings followed by
    the docs' block, as written there."""
    site = tmp_path_factory.mktemp("own-site")
    done = subprocess.run(
        [sys.executable, "-m", "django", "startproject", "mysite", str(site)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    settings = site / "mysite" / "settings.py"
    settings.write_text(settings.read_text() + INSTALLED)
    production = "from mysite.settings import *  # noqa: F403\n\n" + production_block()
    (site / "mysite" / "production.py").write_text(production)
    return site


def run_in(site, settings: str, *args: str) -> subprocess.CompletedProcess:
    """``manage.py *args`` of ``site`` with its settings module ``settings`` and a
    deployment's secret key."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "USERGROUPS_"))
    }
    env.update(DJANGO_SETTINGS_MODULE=settings, DJANGO_SECRET_KEY=random_secret_key())
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=site, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def warnings_of(done: subprocess.CompletedProcess) -> set[str]:
    return set(re.findall(r"\(([a-z_]+\.[WE]\d+)\)", done.stderr))


def test_a_new_site_fails_the_deploy_check_without_the_production_block(own_site):
    done = run_in(own_site, "mysite.settings", *DEPLOY_CHECK[1:])
    assert done.returncode != 0
    assert warnings_of(done) == WITHOUT_THE_BLOCK, done.stderr


def test_the_production_block_of_the_docs_passes_the_deploy_check(own_site):
    done = run_in(own_site, "mysite.production", *DEPLOY_CHECK[1:])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_the_example_projects_https_sets_what_the_block_sets(monkeypatch):
    """DJANGO_HTTPS=true of the example project and the docs' block: one set of values."""
    monkeypatch.setenv("DJANGO_SECRET_KEY", random_secret_key())
    block: dict = {"BASE_DIR": ROOT}
    exec(compile(production_block(), str(DEPLOYMENT), "exec"), block)
    https = sorted(name for name in block if name.startswith(("SECURE_", "SESSION_", "CSRF_")))
    assert len(https) == 7
    show = f"from django.conf import settings as s; print(repr([getattr(s, n) for n in {https}]))"
    done = run(["-c", f"import django; django.setup(); {show}"], **production())
    assert done.stdout.strip() == repr([block[name] for name in https]), done.stderr


def test_collectstatic_gathers_embed_js_where_the_docs_say(own_site):
    done = run_in(own_site, "mysite.production", "collectstatic", "--noinput")
    assert done.returncode == 0, done.stderr
    docs = DEPLOYMENT.read_text()
    assert "`staticfiles/usergroups/embed.js`" in docs
    collected = own_site / "staticfiles" / "usergroups" / "embed.js"
    assert collected.read_bytes() == (ROOT / "usergroups/static/usergroups/embed.js").read_bytes()
    url = "from django.templatetags.static import static; print(static('usergroups/embed.js'))"
    done = run_in(own_site, "mysite.production", "shell", "--verbosity", "0", "-c", url)
    assert done.stdout.strip() == "/static/usergroups/embed.js", done.stderr
    assert "`/static/usergroups/embed.js`" in docs

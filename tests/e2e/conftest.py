"""End-to-end tests of the admin in headless Chromium (pytest-playwright).

The browser is Debian's ``chromium`` package, launched by its path (``playwright install``
is never needed). Every page visited is saved under ``artifacts/screenshots/``.
"""

import contextlib
import os
import signal
from pathlib import Path

import pytest
from django.db import connection

from example_project.dashboards.demo import seed_demo_groups, seed_demo_people
from example_project.dashboards.sources import ensure_sample_data
from tests.support.demo_backend import keep_demo_key
from tests.support.deployment import FAST_WEBHOOKS, ManageProcess, database_url, server_env
from tests.support.factories import APIKeyFactory, WorkspaceFactory
from tests.support.origins import running_origin
from tests.support.services import CHROMIUM

# Playwright's sync API runs an asyncio loop in this thread for the rest of the session,
# which Django would otherwise take for async code and refuse ORM calls in.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
ADMIN_PASSWORD = "correct horse battery staple"


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/e2e/" in item.nodeid.replace(os.sep, "/"):
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.needs("chromium"))


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    # Every e2e test is marked needs("chromium"): skipped before this when it is missing.
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": CHROMIUM_ARGS,
    }


@pytest.fixture(scope="session")
def base_url():
    """Pages are opened by full ``live_server`` URLs. (Also replaces the plugin's own
    fixture, which pytest 9 warns about.)"""
    return None


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {
        **browser_context_args,
        "viewport": {"width": 1440, "height": 900},
        "device_scale_factor": 1,
        "locale": "en-US",
        "timezone_id": "UTC",
        "permissions": ["clipboard-read", "clipboard-write"],
    }


@pytest.fixture
def screenshot(page):
    """``screenshot("groups-01-login")`` saves the whole page as a PNG (overwriting the
    previous run's: the names are fixed, so a person finds each page at the same path);
    ``screenshot(name, other_page)``, another page of the test's (a second browser's)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(name: str, shown=None) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        (shown or page).screenshot(path=str(path), full_page=True)
        return path

    return take


@pytest.fixture
def admin_login(page, live_server, django_user_model, screenshot):
    """Logs in through the login form as a superuser; returns ``(admin URL, user)``."""
    user = django_user_model.objects.create_superuser(
        "operator", "operator@example.com", ADMIN_PASSWORD
    )

    def login(shot_prefix: str) -> str:
        page.goto(f"{live_server.url}/admin/")
        page.get_by_label("Username").fill("operator")
        page.get_by_label("Password").fill(ADMIN_PASSWORD)
        screenshot(f"{shot_prefix}-01-login")
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{live_server.url}/admin/")
        screenshot(f"{shot_prefix}-02-admin-index")
        return f"{live_server.url}/admin/"

    login.user = user
    return login


@pytest.fixture
def demo(transactional_db, settings, tmp_path):
    """What ``make demo`` sets up: the demo workspace, its groups and people, the sample
    rows, and the API key the customer site's backend calls the live server's API with
    (kept in its key file). Returns ``(workspace, API key)``."""
    settings.DASHBOARDS_DEMO_SITE = True
    ensure_sample_data()
    workspace = WorkspaceFactory(slug="demo", name="Demo")
    seed_demo_groups(workspace)
    seed_demo_people(workspace)
    key = APIKeyFactory(workspace=workspace, name="customer site backend").key
    keep_demo_key(settings, tmp_path, key)
    return workspace, key


@pytest.fixture
def watched(page):
    """Every request the browser makes (frames included) and every script error or CSP
    violation."""
    seen = {"requests": [], "problems": []}
    page.on("request", lambda request: seen["requests"].append(request))
    page.on("pageerror", lambda error: seen["problems"].append(f"page error: {error}"))

    def console(message):
        if "Content Security Policy" in message.text or message.type == "warning":
            seen["problems"].append(f"console {message.type}: {message.text}")

    page.on("console", console)
    return seen


@pytest.fixture
def task_worker(transactional_db, settings, tmp_path):
    """``manage.py db_worker`` (django-tasks-db) in a process of its own, beside the live
    server and on its test database, as ``make demo`` runs it: it delivers the webhooks of
    what the test commits, with the small webhook settings of the live tests. Stopped
    before the test's database is flushed; its output is ``tmp_path/worker.log``."""
    settings.USERGROUPS = {**settings.USERGROUPS, "WEBHOOK_ALLOW_PRIVATE": True}
    env = server_env(
        database_url(connection.settings_dict),
        DJANGO_SECRET_KEY=settings.SECRET_KEY,  # it opens the webhook secrets sealed here
        **FAST_WEBHOOKS,
    )
    worker = ManageProcess(
        env, tmp_path / "worker.log", "db_worker", "--interval", "0.05", "--no-startup-delay",
        "--no-reload", "--verbosity", "0",
    )  # fmt: skip
    worker.start()
    try:
        yield worker
    finally:
        worker.kill(signal.SIGTERM)


@pytest.fixture
def origins():
    """Starts web origins of their own beside the live server (tests/support/origins.py):
    ``origins()`` is a new one, stopped after the test."""
    with contextlib.ExitStack() as stack:
        yield lambda: stack.enter_context(running_origin())


@pytest.fixture
def probe(live_server, settings):
    """The URL of tests/e2e/static/embed-probe.html on the live server (the host's origin):
    a dashboard that is embed.js alone, recording its messages and events."""
    settings.STATICFILES_DIRS = [Path(__file__).resolve().parent / "static"]
    return f"{live_server.url}/static/embed-probe.html"

import json
import logging
import re
from contextlib import contextmanager

import pytest
from rest_framework.test import APIClient

from tests import services
from tests.factories import APIKeyFactory, UserGroupFactory, WorkspaceFactory

API_URL = "/api/user"


def pytest_runtest_setup(item):
    """``@pytest.mark.needs("redis")``: skipped (failed under CI=true) when the machine
    lacks the service; see tests/services.py. Runs before the test's fixtures."""
    for marker in item.iter_markers("needs"):
        for service in marker.args:
            services.require(service)


@pytest.fixture
def workspace(db):
    return WorkspaceFactory()


@pytest.fixture
def api_key(workspace):
    """An active key of ``workspace``; ``api_key.key`` is the plain key."""
    return APIKeyFactory(workspace=workspace)


@pytest.fixture
def api_client(api_key):
    """An APIClient sending ``Authorization: Token <key>`` of ``api_key``."""
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_key.key}")
    return api


@pytest.fixture
def anon_api_client():
    return APIClient()


@pytest.fixture
def group(workspace):
    """A group of ``workspace``; ``group.token`` is its current token."""
    return UserGroupFactory(workspace=workspace)


# --- Helpers for the API tests (test_get_or_create, test_rotate, test_errors, ...) ---


def send(client, method, body=b"", path=API_URL, content_type="application/json", **extra):
    """Send ``body`` with any method, GET included: a dict or list goes as JSON text,
    ``str``/``bytes`` as given (to send malformed JSON)."""
    if not isinstance(body, str | bytes):
        body = json.dumps(body)
    return client.generic(method, path, body, content_type=content_type, **extra)


def get_or_create(client, body, **kwargs):
    return send(client, "GET", body, **kwargs)


def rotate(client, body, **kwargs):
    return send(client, "POST", body, **kwargs)


def client_for(api_key) -> APIClient:
    """An APIClient authenticated with ``api_key`` (made by ``APIKeyFactory``)."""
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_key.key}")
    return api


def stored_state():
    """Every UserGroup and SchemaMapping row, all columns: equal before and after a
    request that must not change the database."""
    from usergroups.models import SchemaMapping, UserGroup

    return (
        list(UserGroup.objects.order_by("pk").values()),
        list(SchemaMapping.objects.order_by("pk").values()),
    )


@contextmanager
def database_unchanged():
    """Fails the test if the body of the ``with`` changed any group or mapping row."""
    before = stored_state()
    yield
    assert stored_state() == before


@pytest.fixture
def other_workspace(db):
    return WorkspaceFactory()


@pytest.fixture
def other_api_client(other_workspace):
    """An APIClient with a key of ``other_workspace``: another tenant."""
    return client_for(APIKeyFactory(workspace=other_workspace))


# --- Session-wide guard: no log record of the whole run holds a secret ---------------------

SECRET_IN_LOG = re.compile(r"ugk_[A-Za-z0-9_-]{43}|ugt_[A-Za-z0-9_-]{43}")


def secrets_in(text: str) -> list[str]:
    """Every API key or group token shaped string in ``text``."""
    return SECRET_IN_LOG.findall(text)


class SecretLogGuard(logging.Handler):
    """Formats every record it is handed (message, traceback, stack) and keeps those
    that hold a secret. Only leaks are kept: the run logs thousands of records."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.checked = 0
        self.leaks: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
        except Exception:  # a record whose args do not fit its message
            text = f"{record.msg!r} {record.args!r}"
        self.checked += 1
        found = secrets_in(text)
        if found:
            # Named, not shown: the report of a leak must not repeat it.
            shown = text.splitlines()[0]
            for secret in found:
                shown = shown.replace(secret, secret[:8] + "…")
            self.leaks.append(f"{record.name} ({record.pathname}:{record.lineno}): {shown}")

    def check(self) -> None:
        if self.leaks:
            pytest.fail(
                f"{len(self.leaks)} of {self.checked} log records held an API key or a group "
                "token:\n" + "\n".join(self.leaks[:20]),
                pytrace=False,
            )


@pytest.fixture(scope="session", autouse=True)
def no_secret_in_any_log_record():
    """For the whole run: every record that reaches the root logger (and loggers that do
    not propagate) is checked; a secret in any fails the run at its end. The app's own
    ``usergroups`` loggers are opened down to DEBUG, so their debug records count too."""
    guard = SecretLogGuard()
    app_logger = logging.getLogger("usergroups")
    app_level = app_logger.level
    app_logger.setLevel(logging.DEBUG)
    attached = [logging.root] + [
        logger
        for logger in logging.root.manager.loggerDict.values()
        if isinstance(logger, logging.Logger) and not logger.propagate
    ]
    for logger in attached:
        logger.addHandler(guard)
    try:
        yield guard
    finally:
        for logger in attached:
            logger.removeHandler(guard)
        app_logger.setLevel(app_level)
    guard.check()

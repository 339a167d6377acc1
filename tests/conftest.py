"""Fixtures shared by every test; the helpers they use live in tests/support/."""

import logging
from collections.abc import Iterator

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from tests.support import services
from tests.support.api import client_for
from tests.support.factories import APIKeyFactory, UserGroupFactory, WorkspaceFactory
from tests.support.leaks import audit_event_leaks
from tests.support.log_guard import SecretLogGuard
from tests.support.telemetry import RecordedTelemetry, installed
from usergroups import read_model
from usergroups.models import APIKey, UserGroup, Workspace


def pytest_runtest_setup(item):
    """``@pytest.mark.needs("redis")``: skipped (failed under CI=true) when the machine
    lacks the service; see tests/support/services.py. Runs before the test's fixtures."""
    for marker in item.iter_markers("needs"):
        for service in marker.args:
            services.require(service)


DATABASE_FIXTURES = frozenset({"db", "transactional_db", "django_db_reset_sequences"})


def uses_database(item: pytest.Item) -> bool:
    """Whether the test reaches the test database (pytest-django blocks it otherwise)."""
    fixtures = set(getattr(item, "fixturenames", ()))
    return bool(DATABASE_FIXTURES & fixtures) or item.get_closest_marker("django_db") is not None


def pytest_collection_modifyitems(items):
    """``database``: the tests that reach the test database, which are all that a run on
    another database changes (.ci/run's PostgreSQL and MariaDB passes run just them)."""
    for item in items:
        if uses_database(item):
            item.add_marker(pytest.mark.database)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """After every test that used the database, while what it wrote is still there: no
    audit event holds a secret's shape (CONTRACT section 8: a token is named by its
    ``jti``, a key by its prefix), whichever door of the app wrote it; and after a test
    that read the telemetry, no metric attribute or span holds one either."""
    result = yield
    if item.get_closest_marker("any_text"):
        return result  # the caller's own text, which may take a secret's shape
    if "telemetry_reader" in item.fixturenames:
        leaks = installed().leaks()
        assert not leaks, f"telemetry holds secrets: {leaks}"
    if uses_database(item):
        leaks = audit_event_leaks()
        assert not leaks, f"audit events hold secrets: {leaks}"
    return result


@pytest.fixture
def telemetry_reader() -> RecordedTelemetry:
    """What the app's instruments and spans record during the test, read as a host's
    OpenTelemetry SDK would (its in-memory metric reader and span exporter)."""
    recorded = installed()
    recorded.start()
    return recorded


@pytest.fixture
def workspace(db: None) -> Workspace:
    return WorkspaceFactory.create()


@pytest.fixture
def api_key(workspace: Workspace) -> APIKey:
    """An active key of ``workspace``; ``api_key.key`` is the plain key."""
    return APIKeyFactory.create(workspace=workspace)


@pytest.fixture
def recently_used_key(api_key: APIKey) -> APIKey:
    """``api_key``, used a moment ago: ``last_used_at`` is written at most once a minute,
    so authenticating with it costs exactly one query and writes nothing."""
    APIKey.objects.filter(pk=api_key.pk).update(last_used_at=timezone.now())
    return api_key


@pytest.fixture
def api_client(api_key: APIKey) -> APIClient:
    """An APIClient sending ``Authorization: Token <key>`` of ``api_key``."""
    return client_for(api_key.key)


@pytest.fixture
def anon_api_client() -> APIClient:
    return APIClient()


@pytest.fixture
def group(workspace: Workspace) -> UserGroup:
    """A group of ``workspace``; ``group.token`` is its current token."""
    return UserGroupFactory.create(workspace=workspace)


@pytest.fixture
def other_workspace(db: None) -> Workspace:
    return WorkspaceFactory.create()


@pytest.fixture
def other_api_client(other_workspace: Workspace) -> APIClient:
    """An APIClient with a key of ``other_workspace``: another tenant."""
    return client_for(APIKeyFactory.create(workspace=other_workspace).key)


# --- Session-wide guard: no log record of the whole run holds a secret ---------------------


@pytest.fixture(scope="session", autouse=True)
def no_secret_in_any_log_record() -> Iterator[SecretLogGuard]:
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


@pytest.fixture(autouse=True)
def _read_model_stopped() -> Iterator[None]:
    """Each test begins with a process that has heard nothing and holds nothing, and
    leaves no listening connection behind (the test database is dropped at the end)."""
    yield
    read_model.stop()

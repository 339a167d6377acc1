import json
from contextlib import contextmanager

import pytest
from rest_framework.test import APIClient

from tests.factories import APIKeyFactory, UserGroupFactory, WorkspaceFactory

API_URL = "/api/user"


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

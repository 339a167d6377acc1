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

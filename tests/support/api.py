"""Requests to ``/api/user`` in the test process, through DRF's test client.

One helper per operation, each taking the client first and the body as the API gets it,
so that every test sends its requests the same way. For a server in another process, see
:mod:`tests.support.http`.
"""

import json
from typing import TYPE_CHECKING, Any, cast

from rest_framework.test import APIClient

if TYPE_CHECKING:
    # What the test client answers: a response with ``.json()`` (a name of the stubs only).
    from rest_framework.response import _MonkeyPatchedResponse as TestResponse

API_URL = "/api/user"


def client_for(key: str) -> APIClient:
    """An APIClient sending ``Authorization: Token <key>``: any string, a valid plain API
    key (``APIKeyFactory().key``, a key printed by ``create_api_key``) or not."""
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return api


def send(
    client: APIClient,
    method: str,
    body: Any = b"",
    path: str = API_URL,
    content_type: str = "application/json",
    **extra: Any,
) -> "TestResponse":
    """Send ``body`` with any method, GET included: a dict or list goes as JSON text,
    ``str``/``bytes`` as given (to send malformed JSON)."""
    if not isinstance(body, str | bytes):
        body = json.dumps(body)
    # The stubs type APIClient.generic as the request factory's (a Request): it answers.
    return cast(
        "TestResponse", client.generic(method, path, body, content_type=content_type, **extra)
    )


def get_or_create(client: APIClient, body: Any, **extra: Any) -> "TestResponse":
    """``GET /api/user`` with ``body`` (e.g. ``{"user_group_id": "acme"}``)."""
    return send(client, "GET", body, **extra)


def rotate(client: APIClient, body: Any, **extra: Any) -> "TestResponse":
    """``POST /api/user`` with ``body`` (e.g. ``{"current_token": token}``)."""
    return send(client, "POST", body, **extra)


def status_and_body(response: "TestResponse") -> tuple[int, Any]:
    """``(status code, decoded JSON body)`` of an API answer, for tests that check both
    at once (``status, body = status_and_body(get_or_create(...))``)."""
    return response.status_code, response.json()


def assert_error(
    response: "TestResponse", status: int, code: str, fields: Any = None
) -> dict[str, Any]:
    """The response is the contract's error body, naming exactly ``fields`` if given."""
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"success", "error"}
    assert body["success"] == 0 and type(body["success"]) is int
    error = body["error"]
    assert type(error["code"]) is str and error["code"] == code
    assert type(error["message"]) is str and error["message"]
    if fields is None:
        assert set(error) == {"code", "message"}
    else:
        assert set(error) == {"code", "message", "fields"}
        assert set(error["fields"]) == set(fields)
        for messages in error["fields"].values():
            assert messages and all(type(m) is str and m for m in messages)
    return error


# The keys of ``user_group`` in a get-or-create or update answer (contract sections 3, 5).
GROUP_KEYS = {
    "team_id",
    "token",
    "name",
    "provided_id",
    "properties",
    "mapping",
    "parent_user_group_id",
    "computed_properties",
    "computed_mapping",
}

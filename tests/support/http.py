"""Requests to a live server over real HTTP, as an API client sends them.

For servers in another process or thread (gunicorn from :mod:`tests.support.gunicorn`,
pytest-django's ``live_server``); in-process tests use :mod:`tests.support.api`.
"""

import json
import urllib.error
import urllib.request
from email.message import Message
from typing import Any

API_PATH = "/api/user"


def call_api(
    base_url: str,
    api_key: str,
    method: str,
    body: dict[str, Any],
    *,
    path: str = API_PATH,
    timeout: float = 10,
) -> tuple[int, Any]:
    """One request with a JSON ``body`` and ``Authorization: Token <api_key>``; its status
    and decoded JSON answer (``{"raw": ...}`` with the first 500 characters of an answer
    that is not JSON, such as a proxy's or gunicorn's own error page). A connection that
    fails raises ``OSError``."""
    status, payload, _headers = exchange(
        base_url, method, body, f"Token {api_key}", path=path, timeout=timeout
    )
    return status, payload


def exchange(
    base_url: str,
    method: str,
    body: dict[str, Any] | None,
    authorization: str,
    *,
    path: str = API_PATH,
    timeout: float = 10,
) -> tuple[int, Any, Message]:
    """Like :func:`call_api` with any ``Authorization`` (``Embed <token>``), and the
    answer's headers too (a proxy's ``X-Served-By``); ``body`` None sends none."""
    request = urllib.request.Request(
        f"{base_url}{path}",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": authorization, "Content-Type": "application/json"},
    )
    # No proxy from the environment: the server is on loopback.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status, _decoded(response.read()), response.headers
    except urllib.error.HTTPError as error:
        with error:
            return error.code, _decoded(error.read()), error.headers


def _decoded(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return {"raw": raw[:500].decode("utf-8", "replace")}

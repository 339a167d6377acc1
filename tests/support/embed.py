"""Embed tokens in tests: the endpoints of CONTRACT section 6, a host view that takes
``Authorization: Embed``, and minting at another time (the clock moved, never slept)."""

import contextlib
import json
import re
from datetime import timedelta
from typing import Any
from unittest import mock

from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.test import APIClient, APIRequestFactory
from rest_framework.views import APIView

from tests.support import ROOT
from tests.support.api import send
from usergroups.auth.embed import EmbedTokenAuthentication
from usergroups.auth.permissions import HasEmbedToken
from usergroups.contrib.variables import group_variables
from usergroups.errors.handler import exception_handler

EMBED_URL = "/api/user/embed-token"
INTROSPECT_URL = f"{EMBED_URL}/introspect"
REVOKE_URL = f"{EMBED_URL}/revoke"
JWKS_URL = f"{EMBED_URL}/jwks"


def mint(client: APIClient, body: Any, path: str = EMBED_URL, **extra: Any):
    return send(client, "POST", body, path=path, **extra)


def minted(client: APIClient, user_group_id: str, **fields: Any) -> str:
    """A new embed token for ``user_group_id`` (the mint must succeed)."""
    response = mint(client, {"user_group_id": user_group_id, **fields})
    assert response.status_code == 200, response.content
    return response.json()["embed_token"]


def introspect(client: APIClient, token: Any, **extra: Any):
    return send(client, "POST", {"embed_token": token}, path=INTROSPECT_URL, **extra)


def revoke(client: APIClient, body: Any, path: str = REVOKE_URL, **extra: Any):
    return send(client, "POST", body, path=path, **extra)


@contextlib.contextmanager
def clock_moved(seconds: float):
    """``timezone.now()`` ``seconds`` away from now (negative: the past), e.g. to mint
    a token that has expired by the time it is verified with the real clock."""
    moved = timezone.now() + timedelta(seconds=seconds)
    with mock.patch("django.utils.timezone.now", return_value=moved):
        yield moved


class DashboardView(APIView):
    """A host's data endpoint: embed tokens only; answers the grant's variables."""

    authentication_classes = [EmbedTokenAuthentication]
    permission_classes = [HasEmbedToken]

    def get_exception_handler(self):
        return exception_handler

    def get(self, request: Request) -> Response:
        return Response({"variables": group_variables(request.auth)})


class SalesView(DashboardView):
    embed_resource = "sales"


_factory = APIRequestFactory()


def dashboard(token: str | None, view=DashboardView, scheme: str = "Embed", **headers: Any):
    """GET the host view with ``Authorization: <scheme> <token>`` and extra headers
    (``HTTP_ORIGIN=...``); the rendered response."""
    if token is not None:
        headers["HTTP_AUTHORIZATION"] = f"{scheme} {token}"
    response = view.as_view()(_factory.get("/dashboard", **headers))
    response.render()
    response.json = lambda: json.loads(response.content)  # as the test client's answers
    return response


def docs_host_views() -> list[type[APIView]]:
    """The views docs/host-views.md writes, each Python block run after the ones before it
    (as a reader's views.py grows); ``urls.py`` blocks left out (they import ``mysite``)."""
    page = (ROOT / "docs" / "host-views.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", page, re.M | re.S)
    namespace: dict = {"__name__": "docs_host_views"}
    views = []
    for block in blocks:
        if block.startswith("# urls.py"):
            continue
        before = dict(namespace)
        exec(block, namespace)  # the docs' own code, as written
        views += [
            value
            for name, value in namespace.items()
            if isinstance(value, type) and issubclass(value, APIView) and before.get(name) is not value
            and value is not APIView
        ]  # fmt: skip
    return views

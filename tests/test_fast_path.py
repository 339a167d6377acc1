"""The fast paths (usergroups.fastpath) of GET /api/user and of the mint of an embed token
answer exactly as DRF's dispatch.

Each request below is sent twice, once with the fast path and once with the view's
``fast_path = False`` (DRF all the way), each time in a transaction rolled back after
it, so both see the same database. Status, headers, body, the number of queries and the
log lines must be the same; for a creation, the new group's token and team_id (random,
or from a sequence) are compared by shape only, and so are a new embed token and its
expiry time (random, and a second later if the clock ticked between the two).
"""

import json
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import OperationalError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.support.api import API_URL, client_for, send
from tests.support.embed import EMBED_URL
from tests.support.factories import APIKeyFactory, SchemaMappingFactory, UserGroupFactory
from usergroups import crypto
from usergroups.api.embed_views import EmbedTokenView
from usergroups.api.views import FastPathView, UserGroupView
from usergroups.embed import tokens
from usergroups.services import groups

pytestmark = pytest.mark.usefixtures("recently_used_key")

ACME = {"user_group_id": "acme"}


@pytest.fixture
def acme(workspace):
    group = UserGroupFactory(workspace=workspace, provided_id="acme", properties={"a": 1})
    SchemaMappingFactory(group=group, schema_id="sales", data_source_id="ds-1")
    UserGroupFactory(workspace=workspace, provided_id="acme-child", parent=group)
    return group


#: Each view with a fast path, and where it answers.
PATHS: dict[type[FastPathView], str] = {UserGroupView: API_URL, EmbedTokenView: EMBED_URL}


def run(
    client: Any,
    body: Any,
    fast: bool,
    caplog: pytest.LogCaptureFixture,
    view: type[FastPathView] = UserGroupView,
    **extra: Any,
) -> dict[str, Any]:
    """One request, in a transaction rolled back after it: what the client saw."""
    caplog.clear()
    view.fast_path = fast
    try:
        with transaction.atomic(), CaptureQueriesContext(connection) as queries:
            response = send(client, view.fast_method, body, path=PATHS[view], **extra)
            transaction.set_rollback(True)
    finally:
        view.fast_path = True
    answer = json.loads(response.content) if response.content else None
    if answer and "embed_token" in answer:
        assert (
            tokens.verify(answer["embed_token"]).user_group_id
            == answer["user_group"]["provided_id"]
        )
        answer["embed_token"] = answer["expires_at"] = "<new>"
        response.content = json.dumps(answer).encode()
    headers = dict(response.headers)
    logs = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    if answer and answer.get("new_user_group"):
        group = answer["user_group"]
        assert crypto.looks_like_group_token(group["token"]), group
        assert type(group["team_id"]) is int
        new_id = f"team_id={group['team_id']} "
        logs = [
            (name, level, message.replace(new_id, "team_id=<new> "))
            for name, level, message in logs
        ]
        group["token"] = group["team_id"] = "<new>"
        del headers["Content-Length"]  # a sequence's next team_id may have more digits
    return {
        "status": response.status_code,
        "headers": headers,
        "content": answer if answer and answer.get("new_user_group") else response.content,
        "queries": len(queries),
        "logs": logs,
    }


def assert_same(
    client: Any,
    body: Any,
    caplog: pytest.LogCaptureFixture,
    view: type[FastPathView] = UserGroupView,
    **extra: Any,
) -> int:
    caplog.set_level(logging.DEBUG, logger="usergroups")
    fast = run(client, body, True, caplog, view, **extra)
    drf = run(client, body, False, caplog, view, **extra)
    assert fast == drf
    return int(fast["status"])


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (ACME, 200),
        (
            {**ACME, "name": "x", "mapping": {"a": "b"}, "properties": {"p": [1, None]}},
            200,
        ),
        ({"user_group_id": "acme-child"}, 200),
        ({"user_group_id": "new", "mapping": {"s": 7}, "properties": {"t": "\u2028é"}}, 200),
        ({"user_group_id": "new", "name": None, "parent_user_group_id": "acme"}, 200),
        ({"user_group_id": "new", "parent_user_group_id": "missing"}, 400),
        ({"user_group_id": ""}, 400),
        ({"user_group_id": "a", "mapping": {"a": ""}}, 400),
        ({"user_group_id": 12}, 400),
        ({"user_group_id": "a", "unknown": 1}, 200),
        ({}, 400),
        ([ACME], 400),
        (b"not json", 400),
        (b'{"user_group_id": NaN}', 400),
        (b'{"user_group_id": "a"', 400),
        (b"\xff\xfe", 400),
        (b"null", 400),
    ],
    ids=lambda v: repr(v)[:40],
)
def test_bodies(api_client, acme, caplog, body, status):
    assert assert_same(api_client, body, caplog) == status


@pytest.mark.parametrize(
    ("header", "status"),
    [
        (None, 401),
        ("Bearer abc", 401),
        ("Token", 401),
        ("Token ugk_malformed", 401),
        (f"Token {crypto.new_api_key()}", 401),
        ("token {key}", 200),
        ("Token {key} extra", 401),
    ],
    ids=["none", "other-scheme", "no-key", "malformed", "unknown", "lowercase", "three-parts"],
)
def test_authorization_headers(acme, api_key, caplog, header, status):
    client = client_for("")
    client.credentials(**({"HTTP_AUTHORIZATION": header.format(key=api_key.key)} if header else {}))
    assert assert_same(client, ACME, caplog) == status


@pytest.mark.parametrize(
    ("change", "body", "status"),
    [
        ({"revoked_at": timezone.now()}, ACME, 401),
        ({"expires_at": timezone.now() - timedelta(seconds=1)}, ACME, 401),
        ({"scope_read": False}, ACME, 403),
        ({"scope_write": False}, {"user_group_id": "new"}, 403),
        ({"scope_write": False}, ACME, 200),
        ({"last_used_at": None}, ACME, 200),  # the key's use is recorded: one write more
    ],
    ids=["revoked", "expired", "no-read", "no-write-create", "no-write-read", "unused"],
)
def test_keys(workspace, acme, caplog, change, body, status):
    key = APIKeyFactory(workspace=workspace, **change)
    assert assert_same(client_for(key.key), body, caplog) == status


@pytest.mark.parametrize(
    "extra",
    [
        {"content_type": "text/plain"},
        {"content_type": "application/json; charset=utf-8"},
        {"content_type": "APPLICATION/JSON"},
        {"HTTP_ACCEPT": "application/xml"},
        {"HTTP_ACCEPT": "application/json; indent=4"},
        {"QUERY_STRING": "user_group_id=other"},
        {"HTTP_TRANSFER_ENCODING": "chunked"},
    ],
    ids=repr,
)
def test_request_shapes(api_client, acme, caplog, extra):
    assert_same(api_client, ACME, caplog, **extra)


def test_an_empty_body_reads_the_query_string(api_client, acme, caplog):
    assert assert_same(api_client, b"", caplog, QUERY_STRING="user_group_id=acme") == 200


def test_a_body_over_the_limit(api_client, acme, caplog, settings):
    settings.USERGROUPS = {"MAX_BODY_BYTES": 20}
    assert assert_same(api_client, {**ACME, "name": "x" * 30}, caplog) == 413


def test_throttling_on(api_client, acme, caplog, settings):
    settings.USERGROUPS = {"THROTTLE_RATE": "1000/minute"}
    assert assert_same(api_client, ACME, caplog) == 200


def test_a_token_no_secret_opens(api_client, acme, caplog, settings):
    settings.SECRET_KEY = "another-secret-key-that-opens-nothing-0123456789abcdef"
    settings.SECRET_KEY_FALLBACKS = []
    assert assert_same(api_client, ACME, caplog) == 503


def failing(error: Exception) -> Callable[..., Any]:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise error

    return fail


def test_a_database_failure_during_the_lookup(api_client, acme, caplog, monkeypatch):
    monkeypatch.setattr(groups, "find_group", failing(OperationalError("gone")))
    assert assert_same(api_client, ACME, caplog) == 503


def test_a_database_failure_during_authentication(api_client, acme, caplog, monkeypatch):
    from usergroups.auth.api_key import APIKeyAuthentication

    lookup = staticmethod(failing(OperationalError("gone")))
    monkeypatch.setattr(APIKeyAuthentication, "lookup", lookup)
    assert assert_same(api_client, ACME, caplog) == 503


def test_a_bug_is_a_server_error_both_ways(api_client, acme, monkeypatch):
    monkeypatch.setattr(groups, "find_group", failing(ZeroDivisionError()))
    for fast in (True, False):
        UserGroupView.fast_path = fast
        try:
            with pytest.raises(ZeroDivisionError):
                send(api_client, "GET", ACME)
        finally:
            UserGroupView.fast_path = True


def test_the_fast_path_is_taken(api_client, acme, monkeypatch):
    """The comparisons above would pass if the fast path never ran: it does."""
    from rest_framework.views import APIView

    monkeypatch.setattr(APIView, "dispatch", failing(AssertionError("DRF's dispatch ran")))
    response = send(api_client, "GET", ACME)
    assert response.status_code == 200
    assert response.json()["user_group"]["provided_id"] == "acme"


def test_subclasses_go_drfs_way(api_client, acme, monkeypatch):
    from django.urls import path

    class Subclass(UserGroupView):
        pass

    urlpatterns = [path("api/user", Subclass.as_view())]
    module = type("urls", (), {"urlpatterns": urlpatterns})
    from django.test import override_settings

    calls = []
    original = UserGroupView.hand_over
    monkeypatch.setattr(UserGroupView, "hand_over", lambda *a: calls.append(a) or original(*a))
    with override_settings(ROOT_URLCONF=module):
        response = send(api_client, "GET", ACME, path=API_URL)
    assert response.status_code == 200
    assert calls == []  # not even begun: DRF from the start


# --- the mint of an embed token ----------------------------------------------------------

MINT_BODIES = [
    (ACME, 200),
    (
        {
            **ACME,
            "resource": "sales",
            "origin": "HTTPS://Example.com:443",
            "expires_in": 60,
            "params": {"region": "EU", "n": [1, None]},
            "unknown": 1,
        },
        200,
    ),
    ({"user_group_id": "acme-child", "params": {"t": "\u2028é"}}, 200),
    ({"user_group_id": "missing"}, 404),
    ({"user_group_id": ""}, 400),
    ({"user_group_id": 12}, 400),
    ({**ACME, "resource": ""}, 400),
    ({**ACME, "resource": None}, 400),
    ({**ACME, "origin": "https://example.com/path"}, 400),
    ({**ACME, "origin": 7}, 400),
    ({**ACME, "expires_in": 29}, 400),
    ({**ACME, "expires_in": True}, 400),
    ({**ACME, "expires_in": 60.0}, 400),
    ({**ACME, "params": ["a"]}, 400),
    ({**ACME, "params": {"big": "x" * 3000}}, 400),
    ({}, 400),
    ([ACME], 400),
    (b"not json", 400),
    (b"null", 400),
]


@pytest.mark.parametrize(("body", "status"), MINT_BODIES, ids=lambda v: repr(v)[:40])
def test_mint_bodies(api_client, acme, caplog, body, status):
    assert assert_same(api_client, body, caplog, EmbedTokenView) == status


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"revoked_at": timezone.now()}, 401),
        ({"scope_embed": False}, 403),
        ({"scope_read": False, "scope_write": False}, 200),
        ({"last_used_at": None}, 200),
    ],
    ids=["revoked", "no-embed-scope", "embed-scope-only", "unused"],
)
def test_mint_keys(workspace, acme, caplog, change, status):
    key = APIKeyFactory(workspace=workspace, **change)
    assert assert_same(client_for(key.key), ACME, caplog, EmbedTokenView) == status


@pytest.mark.parametrize(
    "extra",
    [
        {"content_type": "text/plain"},
        {"HTTP_AUTHORIZATION": "Bearer abc"},
        {"HTTP_TRANSFER_ENCODING": "chunked"},
    ],
    ids=repr,
)
def test_mint_request_shapes(api_client, acme, caplog, extra):
    assert_same(api_client, ACME, caplog, EmbedTokenView, **extra)


def test_a_mint_whose_token_would_be_too_large(api_client, acme, caplog, monkeypatch):
    """An error of the view's answer, raised on the fast path, is answered by DRF."""
    monkeypatch.setattr(tokens, "MAX_TOKEN_BYTES", 100)
    body = {**ACME, "params": {"a": 1}}
    assert assert_same(api_client, body, caplog, EmbedTokenView) == 400


def test_mint_throttling_on(api_client, acme, caplog, settings):
    settings.USERGROUPS = {"THROTTLE_RATE": "1000/minute"}
    assert assert_same(api_client, ACME, caplog, EmbedTokenView) == 200


def test_the_mint_fast_path_is_taken(api_client, acme, monkeypatch):
    from rest_framework.views import APIView

    monkeypatch.setattr(APIView, "dispatch", failing(AssertionError("DRF's dispatch ran")))
    response = send(api_client, "POST", ACME, path=EMBED_URL)
    assert response.status_code == 200
    assert response.json()["user_group"]["provided_id"] == "acme"

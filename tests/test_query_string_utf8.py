"""The query string is percent-decoded as strict UTF-8 (CONTRACT.md section 3, "Hardening
rules"): bytes that are not UTF-8 are a 400 ``invalid`` naming the field, never replaced
with U+FFFD, so two different byte strings can never name one group.

Covers every operation that reads the query string: get-or-create's fallback for an
empty body, and ``GET /api/user/list``.
"""

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient

from tests.support.api import API_URL, assert_error, get_or_create
from tests.support.db_state import database_unchanged
from tests.support.factories import UserGroupFactory
from usergroups.models import UserGroup

LIST_URL = "/api/user/list"

# Percent-encoded bytes that are not UTF-8, each a different byte string.
NOT_UTF8 = {
    "latin-1-e9": "caf%E9",
    "latin-1-e8": "caf%E8",
    "lone-continuation": "%80",
    "truncated": "caf%C3",
    "overlong-slash": "%C0%AF",
    "surrogate": "%ED%A0%80",
    "beyond-unicode": "%F4%90%80%80",
}


@pytest.mark.parametrize("value", NOT_UTF8.values(), ids=NOT_UTF8.keys())
def test_get_or_create_refuses_an_id_that_is_not_utf8(api_client, group, value):
    with database_unchanged():
        response = get_or_create(api_client, b"", path=f"{API_URL}?user_group_id={value}")
    assert_error(response, 400, "invalid", {"user_group_id"})


def test_two_latin1_ids_never_become_one_group(api_client):
    """The attacker's case: both answered 200 with the same group and token."""
    for value in ("caf%E9", "caf%E8"):
        response = get_or_create(api_client, b"", path=f"{API_URL}?user_group_id={value}")
        assert response.status_code == 400, response.content
    assert not UserGroup.objects.exists()


@pytest.mark.parametrize(
    "field, value",
    [
        ("name", "caf%E9"),
        ("mapping", "%7B%22s%22%3A%22d%FF%22%7D"),  # {"s":"d\xff"}
        ("properties", "%7B%22k%22%3A%22caf%E9%22%7D"),  # {"k":"caf\xe9"}
    ],
)
def test_every_query_field_is_strict(api_client, field, value):
    path = f"{API_URL}?user_group_id=acme&{field}={value}"
    with database_unchanged():
        response = get_or_create(api_client, b"", path=path)
    assert_error(response, 400, "invalid", {field})


def test_every_bad_field_is_named(api_client):
    path = f"{API_URL}?user_group_id=%FF&name=%FE"
    assert_error(
        get_or_create(api_client, b"", path=path), 400, "invalid", {"user_group_id", "name"}
    )


def test_a_field_name_that_is_not_utf8_is_named_as_sent(api_client):
    with database_unchanged():
        response = get_or_create(api_client, b"", path=f"{API_URL}?user_group_id=acme&x%E9=1")
    assert_error(response, 400, "invalid", {"x%E9"})


def test_raw_bytes_that_are_not_utf8_are_refused_too(api_client):
    """A client may send bytes unescaped; WSGI hands them over as Latin-1 characters."""
    with database_unchanged():
        response = get_or_create(
            api_client, b"", path=API_URL, QUERY_STRING="user_group_id=caf\xe9"
        )
    assert_error(response, 400, "invalid", {"user_group_id"})


@pytest.mark.parametrize(
    "query_string",
    ["user_group_id=caf%C3%A9", "user_group_id=caf\xc3\xa9"],  # escaped, and raw UTF-8
    ids=["escaped", "raw"],
)
def test_utf8_ids_are_read(api_client, query_string):
    response = get_or_create(api_client, b"", path=API_URL, QUERY_STRING=query_string)
    assert response.status_code == 200, response.content
    assert response.json()["user_group"]["provided_id"] == "café"


def test_percent_decoding_is_unchanged_for_valid_input(api_client):
    """``+`` is a space, ``%2B`` a plus, a key without ``=`` is empty, the last value wins."""
    path = f"{API_URL}?user_group_id=first&user_group_id=a+b%2Bc%26d&name=%E2%9C%93&flag"
    body = get_or_create(api_client, b"", path=path).json()
    assert body["user_group"]["provided_id"] == "a b+c&d"
    assert body["user_group"]["name"] == "✓"


def test_a_body_wins_and_the_query_string_is_not_read(api_client):
    path = f"{API_URL}?user_group_id=caf%E9"
    response = get_or_create(api_client, {"user_group_id": "from-body"}, path=path)
    assert response.status_code == 200, response.content
    assert response.json()["user_group"]["provided_id"] == "from-body"


@pytest.mark.parametrize("field", ["provided_id_prefix", "page", "page_size"])
def test_list_refuses_query_params_that_are_not_utf8(api_client, group, field):
    response = api_client.get(f"{LIST_URL}?{field}=1%E9")
    assert_error(response, 400, "invalid", {field})


def test_list_prefix_is_read_as_utf8(api_client, workspace):
    UserGroupFactory(workspace=workspace, provided_id="café-1")
    UserGroupFactory(workspace=workspace, provided_id="cafe-2")
    body = api_client.get(f"{LIST_URL}?provided_id_prefix=caf%C3%A9").json()
    assert [g["provided_id"] for g in body["user_groups"]] == ["café-1"]


@pytest.mark.parametrize(
    "query_string, status, provided_id",
    [
        (b"user_group_id=caf%C3%A9%E2%9C%93", 200, "caf\u00e9\u2713"),
        ("user_group_id=café✓".encode(), 200, "caf\u00e9\u2713"),  # raw UTF-8 bytes
        (b"user_group_id=caf%E9", 400, None),
    ],
    ids=["escaped", "raw", "latin-1"],
)
def test_under_asgi_too(api_key, query_string, status, provided_id):
    """Django's ASGI handler gives the query string already decoded (as UTF-8); it is
    read the same way, not mistaken for WSGI's Latin-1 text."""
    headers = {"Authorization": f"Token {api_key.key}"}
    response = async_to_sync(AsyncClient().get)(API_URL, headers=headers, QUERY_STRING=query_string)
    assert response.status_code == status, response.content
    if provided_id is not None:
        assert response.json()["user_group"]["provided_id"] == provided_id
    else:
        assert_error(response, 400, "invalid", {"user_group_id"})

"""Every row of the contract's failure table (CONTRACT.md section 3, "Failures").

Each failure is checked for its status, its exact body shape
``{"success": 0, "error": {"code", "message"[, "fields"]}}``, and for leaving the
database as it was.
"""

import json
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.test import override_settings
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart
from django.utils import timezone
from rest_framework.test import APIClient

from tests.support.api import API_URL, assert_error, get_or_create, rotate, send
from tests.support.db_state import database_unchanged
from tests.support.factories import APIKeyFactory, UserGroupFactory
from usergroups import crypto
from usergroups.models import APIKey, UserGroup
from usergroups.services.keys import revoke_key

METHODS = ["GET", "POST"]
MiB = 1024 * 1024


def fails(client, method, body, status, code, fields=None, **kwargs) -> dict:
    """Send the request, check the error, and check the database did not change."""
    with database_unchanged():
        response = send(client, method, body, **kwargs)
    return assert_error(response, status, code, fields)


def valid_body(method: str, group) -> dict:
    """A body that would succeed, so only the thing under test can fail."""
    if method == "GET":
        return {"user_group_id": "new-group"}
    return {"current_token": group.token}


def nested(depth: int, leaf=None) -> dict:
    """An object ``depth`` deep by :func:`usergroups.validators.json_depth`'s count."""
    value = {} if leaf is None else {"leaf": leaf}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


@pytest.fixture(autouse=True)
def existing(group):
    """A stored group (with its mapping), so "nothing changed" compares real rows."""
    group.mappings.create(schema_id="sales", data_source_id="pg-1")
    return group


# --- 400 parse_error ----------------------------------------------------------------------

NOT_JSON = {
    "truncated": b'{"user_group_id": "a"',
    "single-quotes": b"{'user_group_id': 'a'}",
    "trailing-comma": b'{"user_group_id": "a",}',
    "trailing-garbage": b'{"user_group_id": "a"} x',
    "two-objects": b'{"user_group_id": "a"}{}',
    "comment": b'{"user_group_id": "a" /* c */}',
    "nan": b'{"user_group_id": "a", "x": NaN}',
    "infinity": b'{"user_group_id": "a", "x": Infinity}',
    "minus-infinity": b'{"user_group_id": "a", "x": -Infinity}',
    "nan-in-properties": b'{"user_group_id": "a", "properties": {"x": [NaN]}}',
    "raw-control-char": b'{"user_group_id": "a\nb"}',
    "invalid-utf8": b'{"user_group_id": "\xff\xfe"}',
    "overlong-utf8": b'{"user_group_id": "\xc0\xaf"}',
    "utf8-surrogate-bytes": b'{"user_group_id": "\xed\xa0\x80"}',
    "utf16": '{"user_group_id": "a"}'.encode("utf-16"),
    "utf8-bom": b'\xef\xbb\xbf{"user_group_id": "a"}',
    "whitespace-only": b"  \n ",
    "nul-byte": b"\x00",
    "array": b'[{"user_group_id": "a"}]',
    "empty-array": b"[]",
    "string": b'"user_group_id"',
    "number": b"42",
    "float": b"1.5",
    "true": b"true",
    "null": b"null",
    "huge-integer": b'{"user_group_id": "a", "x": ' + b"1" * 5000 + b"}",
    "deep-arrays": b"[" * 100_000 + b"]" * 100_000,
    "deep-objects": b'{"a":' * 100_000 + b"{}" + b"}" * 100_000,
    "deep-unclosed": b"[" * 500_000,
    "deep-properties": (
        b'{"user_group_id": "a", "properties": ' + b'{"a":' * 100_000 + b"1" + b"}" * 100_001
    ),
    "properties-33-deep": json.dumps({"user_group_id": "a", "properties": nested(33)}).encode(),
}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("body", NOT_JSON.values(), ids=NOT_JSON.keys())
def test_not_a_json_object_is_a_parse_error(api_client, method, body):
    fails(api_client, method, body, 400, "parse_error")


def test_properties_32_deep_are_accepted(api_client):
    properties = nested(32, leaf="bottom")
    response = get_or_create(api_client, {"user_group_id": "deep", "properties": properties})
    assert response.status_code == 200, response.content
    assert response.json()["user_group"]["properties"] == properties
    assert UserGroup.objects.get(provided_id="deep").properties == properties


@pytest.mark.parametrize("depth", [33, 40])
def test_properties_deeper_than_32_are_a_parse_error(api_client, depth):
    fails(
        api_client, "GET", {"user_group_id": "a", "properties": nested(depth)}, 400, "parse_error"
    )


@override_settings(USERGROUPS={"MAX_PROPERTIES_DEPTH": 3})
def test_depth_limit_follows_the_setting(api_client):
    fails(api_client, "GET", {"user_group_id": "a", "properties": nested(4)}, 400, "parse_error")
    response = get_or_create(api_client, {"user_group_id": "a", "properties": nested(3)})
    assert response.status_code == 200


# --- 400 invalid -------------------------------------------------------------------------

WRONG_TYPES = {
    "number": 1,
    "float": 1.5,
    "true": True,
    "false": False,
    "list": ["a"],
    "object": {"a": "b"},
}

INVALID_GET = {
    # user_group_id
    "id-missing": ({}, {"user_group_id"}),
    "id-missing-with-name": ({"name": "Acme"}, {"user_group_id"}),
    "id-empty": ({"user_group_id": ""}, {"user_group_id"}),
    "id-256": ({"user_group_id": "x" * 256}, {"user_group_id"}),
    "id-256-unicode": ({"user_group_id": "é" * 256}, {"user_group_id"}),
    "id-null": ({"user_group_id": None}, {"user_group_id"}),
    **{f"id-{t}": ({"user_group_id": v}, {"user_group_id"}) for t, v in WRONG_TYPES.items()},
    "id-huge-float": (b'{"user_group_id": 1e400}', {"user_group_id"}),
    "id-nul": ({"user_group_id": "acme\x00"}, {"user_group_id"}),
    "id-only-nul": ({"user_group_id": "\x00"}, {"user_group_id"}),
    "id-lone-surrogate": ({"user_group_id": "\ud800"}, {"user_group_id"}),
    # name
    "name-256": ({"user_group_id": "a", "name": "n" * 256}, {"name"}),
    **{f"name-{t}": ({"user_group_id": "a", "name": v}, {"name"}) for t, v in WRONG_TYPES.items()},
    "name-nul": ({"user_group_id": "a", "name": "Ac\x00me"}, {"name"}),
    "name-lone-surrogate": ({"user_group_id": "a", "name": "\udfff"}, {"name"}),
    # mapping
    **{
        f"mapping-{t}": ({"user_group_id": "a", "mapping": v}, {"mapping"})
        for t, v in {"list": [["a", "b"]], "string": "a", "number": 1, "true": True}.items()
    },
    "mapping-empty-key": ({"user_group_id": "a", "mapping": {"": "x"}}, {"mapping"}),
    "mapping-empty-value": ({"user_group_id": "a", "mapping": {"a": ""}}, {"mapping"}),
    "mapping-256-value": ({"user_group_id": "a", "mapping": {"a": "x" * 256}}, {"mapping"}),
    "mapping-256-key": ({"user_group_id": "a", "mapping": {"k" * 256: "x"}}, {"mapping"}),
    "mapping-256-digit-int": ({"user_group_id": "a", "mapping": {"a": 10**255}}, {"mapping"}),
    "mapping-float": ({"user_group_id": "a", "mapping": {"a": 1.5}}, {"mapping"}),
    "mapping-true": ({"user_group_id": "a", "mapping": {"a": True}}, {"mapping"}),
    "mapping-false": ({"user_group_id": "a", "mapping": {"a": False}}, {"mapping"}),
    "mapping-null-value": ({"user_group_id": "a", "mapping": {"a": None}}, {"mapping"}),
    "mapping-object-value": ({"user_group_id": "a", "mapping": {"a": {"b": "c"}}}, {"mapping"}),
    "mapping-list-value": ({"user_group_id": "a", "mapping": {"a": ["b"]}}, {"mapping"}),
    "mapping-nul-key": ({"user_group_id": "a", "mapping": {"a\x00": "b"}}, {"mapping"}),
    "mapping-nul-value": ({"user_group_id": "a", "mapping": {"a": "b\x00"}}, {"mapping"}),
    "mapping-surrogate-key": ({"user_group_id": "a", "mapping": {"\ud800": "b"}}, {"mapping"}),
    "mapping-surrogate-value": ({"user_group_id": "a", "mapping": {"a": "\udc00"}}, {"mapping"}),
    "mapping-too-many": (
        {"user_group_id": "a", "mapping": {f"s{n}": "d" for n in range(1001)}},
        {"mapping"},
    ),
    # properties
    **{
        f"properties-{t}": ({"user_group_id": "a", "properties": v}, {"properties"})
        for t, v in {"list": [{"a": 1}], "string": "{}", "number": 1, "true": True}.items()
    },
    "properties-nul-key": ({"user_group_id": "a", "properties": {"a\x00": 1}}, {"properties"}),
    "properties-nul-value": ({"user_group_id": "a", "properties": {"a": "\x00"}}, {"properties"}),
    "properties-nested-nul": (
        {"user_group_id": "a", "properties": {"a": [1, {"b": ["c\x00d"]}]}},
        {"properties"},
    ),
    "properties-nested-nul-key": (
        {"user_group_id": "a", "properties": {"a": {"b\x00": 1}}},
        {"properties"},
    ),
    "properties-lone-surrogate": (
        {"user_group_id": "a", "properties": {"a": "\ud800"}},
        {"properties"},
    ),
    "properties-surrogate-key": (
        {"user_group_id": "a", "properties": {"\udc00x": 1}},
        {"properties"},
    ),
    "properties-nested-surrogate": (
        {"user_group_id": "a", "properties": {"a": [{"b": "\ud800\ud800"}]}},
        {"properties"},
    ),
    "properties-huge-float": (
        b'{"user_group_id": "a", "properties": {"a": 1e400}}',
        {"properties"},
    ),
    "mapping-huge-float": (b'{"user_group_id": "a", "mapping": {"a": 1e400}}', {"mapping"}),
    # several at once: every bad field is named
    "all-four": (
        {"user_group_id": 1, "name": ["n"], "mapping": "m", "properties": 3},
        {"user_group_id", "name", "mapping", "properties"},
    ),
    "missing-id-and-long-name": ({"name": "n" * 256}, {"user_group_id", "name"}),
    "mapping-and-properties": (
        {"user_group_id": "a", "mapping": {"a": ""}, "properties": {"\x00": 1}},
        {"mapping", "properties"},
    ),
}


@pytest.mark.parametrize("body, bad", INVALID_GET.values(), ids=INVALID_GET.keys())
def test_invalid_get_or_create_input_names_each_bad_field(api_client, body, bad):
    # json.dumps keeps lone surrogates and NUL as \u escapes: valid JSON, invalid values.
    fails(api_client, "GET", body, 400, "invalid", bad)


INVALID_ROTATE = {
    "missing": {},
    "missing-with-other-fields": {"token": "ugt_" + "A" * 43, "user_group_id": "a"},
    "empty": {"current_token": ""},
    "null": {"current_token": None},
    **{t: {"current_token": v} for t, v in WRONG_TYPES.items()},
    "nul": {"current_token": "ugt_" + "A" * 42 + "\x00"},
    "lone-surrogate": {"current_token": "ugt_\ud800"},
    "too-long": {"current_token": "ugt_" + "A" * 300},
}


@pytest.mark.parametrize("body", INVALID_ROTATE.values(), ids=INVALID_ROTATE.keys())
def test_invalid_rotate_input_names_current_token(api_client, body):
    fails(api_client, "POST", body, 400, "invalid", {"current_token"})


def test_properties_size_limit_is_64_kib_of_utf8_json(api_client):
    limit = 64 * 1024
    overhead = len('{"k":""}')
    # Two bytes per "é": the limit counts UTF-8 bytes, not characters.
    at_limit = {"k": "é" * ((limit - overhead) // 2)}
    assert len(json.dumps(at_limit, ensure_ascii=False, separators=(",", ":")).encode()) == limit
    response = get_or_create(api_client, {"user_group_id": "big", "properties": at_limit})
    assert response.status_code == 200, response.content
    assert UserGroup.objects.get(provided_id="big").properties == at_limit

    just_over = {"k": at_limit["k"] + "x"}
    fails(
        api_client,
        "GET",
        {"user_group_id": "a", "properties": just_over},
        400,
        "invalid",
        {"properties"},
    )
    ascii_over = {"k": "x" * (limit - overhead + 1)}
    fails(
        api_client,
        "GET",
        {"user_group_id": "a", "properties": ascii_over},
        400,
        "invalid",
        {"properties"},
    )


@override_settings(USERGROUPS={"MAX_PROPERTIES_BYTES": 20})
def test_properties_size_limit_follows_the_setting(api_client):
    # '{"k":"' + 12 characters + '"}' is 20 bytes.
    body = {"user_group_id": "a", "properties": {"k": "x" * 13}}
    fails(api_client, "GET", body, 400, "invalid", {"properties"})
    body["properties"]["k"] = "x" * 12
    assert get_or_create(api_client, body).status_code == 200


@pytest.mark.parametrize("content_type", ["application/json", ""])
def test_empty_get_without_a_query_needs_user_group_id(api_client, content_type):
    fails(api_client, "GET", b"", 400, "invalid", {"user_group_id"}, content_type=content_type)


def test_empty_object_get_needs_user_group_id(api_client):
    fails(api_client, "GET", b"{}", 400, "invalid", {"user_group_id"})


def test_empty_post_needs_current_token(api_client):
    fails(api_client, "POST", b"", 400, "invalid", {"current_token"})


def test_too_many_query_fields_is_a_parse_error(api_client):
    path = API_URL + "?" + "&".join(f"f{n}=1" for n in range(2000))
    fails(api_client, "GET", b"", 400, "parse_error", path=path)


# --- 401 ----------------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_no_authorization_header_is_not_authenticated(anon_api_client, group, method):
    with database_unchanged():
        response = send(anon_api_client, method, valid_body(method, group))
    assert_error(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"] == "Token"


def _expired(workspace, group):
    return (
        "Token "
        + APIKeyFactory(workspace=workspace, expires_at=timezone.now() - timedelta(seconds=1)).key
    )


def _revoked(workspace, group):
    key = APIKeyFactory(workspace=workspace)
    revoke_key(key)
    return "Token " + key.key


def _wrong_secret(workspace, group):
    key = APIKeyFactory(workspace=workspace).key
    return "Token " + key[:-1] + ("A" if key[-1] != "A" else "B")


BAD_HEADERS = {
    "bearer": lambda ws, g: "Bearer " + APIKeyFactory(workspace=ws).key,
    "basic": lambda ws, g: "Basic dXNlcjpwYXNz",
    "basic-with-key": lambda ws, g: "Basic " + APIKeyFactory(workspace=ws).key,
    "scheme-glued": lambda ws, g: "Token" + APIKeyFactory(workspace=ws).key,
    "empty": lambda ws, g: "",
    "spaces": lambda ws, g: "   ",
    "scheme-only": lambda ws, g: "Token",
    "scheme-and-space": lambda ws, g: "Token ",
    "extra-part": lambda ws, g: "Token " + APIKeyFactory(workspace=ws).key + " extra",
    "two-keys": lambda ws, g: "Token {0} {0}".format(APIKeyFactory(workspace=ws).key),
    "unknown-key": lambda ws, g: "Token " + crypto.new_api_key(),
    "wrong-secret": _wrong_secret,
    "malformed-short": lambda ws, g: "Token ugk_short",
    "malformed-long": lambda ws, g: "Token " + APIKeyFactory(workspace=ws).key + "A",
    "malformed-chars": lambda ws, g: "Token ugk_" + "!" * 43,
    "no-prefix": lambda ws, g: "Token " + APIKeyFactory(workspace=ws).key[4:],
    "revoked": _revoked,
    "expired": _expired,
    "group-token": lambda ws, g: "Token " + g.token,
    "group-token-as-scheme": lambda ws, g: "GroupToken " + g.token,
    "key-prefix-only": lambda ws, g: "Token " + APIKeyFactory(workspace=ws).prefix,
}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("make_header", BAD_HEADERS.values(), ids=BAD_HEADERS.keys())
def test_bad_credentials_are_authentication_failed(workspace, group, method, make_header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=make_header(workspace, group))
    keys = list(APIKey.objects.order_by("pk").values())
    with database_unchanged():
        response = send(client, method, valid_body(method, group))
    assert_error(response, 401, "authentication_failed")
    assert response["WWW-Authenticate"] == "Token"
    assert list(APIKey.objects.order_by("pk").values()) == keys  # not even last_used_at


@pytest.mark.parametrize("scheme", ["Token", "token", "TOKEN", "tOkEn"])
@pytest.mark.parametrize("method", METHODS)
def test_scheme_word_is_case_insensitive(api_key, group, scheme, method):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"{scheme} {api_key.key}")
    response = send(client, method, valid_body(method, group))
    assert response.status_code == 200, response.content
    assert response.json()["success"] == 1


def test_key_expiring_in_the_future_works(workspace):
    key = APIKeyFactory(workspace=workspace, expires_at=timezone.now() + timedelta(days=1))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key.key}")
    assert get_or_create(client, {"user_group_id": "a"}).status_code == 200


def test_authentication_comes_before_parsing(anon_api_client):
    """An anonymous caller learns nothing about the body it sent: always 401."""
    for body in (b"not json", b"[]", json.dumps({"user_group_id": ""}).encode()):
        assert_error(send(anon_api_client, "GET", body), 401, "not_authenticated")


# --- 404 ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "token",
    [crypto.new_group_token(), "ugt_short", "not-a-token"],
    ids=["unknown", "malformed", "garbage"],
)
def test_unknown_token_is_not_found(api_client, token):
    fails(api_client, "POST", {"current_token": token}, 404, "not_found")


def test_another_workspaces_token_is_not_found(other_api_client, group):
    fails(other_api_client, "POST", {"current_token": group.token}, 404, "not_found")


def test_rotated_token_is_not_found(api_client, workspace):
    group = UserGroupFactory(workspace=workspace)
    assert rotate(api_client, {"current_token": group.token}).status_code == 200
    fails(api_client, "POST", {"current_token": group.token}, 404, "not_found")


# --- 405 ----------------------------------------------------------------------------------

# The contract's two operations and the extensions (update, delete; see
# test_update_delete_list.py).
ALLOWED = "GET, POST, PUT, DELETE"
NOT_ALLOWED = ["PATCH", "OPTIONS", "TRACE", "CONNECT", "PROPFIND"]


@pytest.mark.parametrize("path", [API_URL, API_URL + "/"])
@pytest.mark.parametrize("method", NOT_ALLOWED)
def test_other_methods_are_not_allowed(api_client, group, method, path):
    body = {"user_group_id": group.provided_id, "current_token": group.token, "name": "changed"}
    error = fails(api_client, method, body, 405, "method_not_allowed", path=path)
    assert method in error["message"]
    response = send(api_client, method, body, path=path)
    assert response["Allow"] == ALLOWED


def test_head_is_not_allowed(api_client):
    with database_unchanged():
        response = send(api_client, "HEAD", b"")
    assert response.status_code == 405
    assert response["Allow"] == ALLOWED


def test_not_allowed_even_with_a_malformed_body(api_client):
    fails(api_client, "PATCH", b"{not json", 405, "method_not_allowed")


# --- 413 ----------------------------------------------------------------------------------


def padded(method: str, group, size: int) -> bytes:
    """A valid body of exactly ``size`` bytes (an ignored field pads it)."""
    body = valid_body(method, group) | {"pad": ""}
    pad = size - len(json.dumps(body).encode())
    assert pad >= 0
    body["pad"] = "x" * pad
    encoded = json.dumps(body).encode()
    assert len(encoded) == size
    return encoded


@pytest.mark.parametrize("method", METHODS)
def test_body_over_the_default_1_mib_is_too_large(api_client, group, method):
    fails(api_client, method, padded(method, group, MiB + 1), 413, "request_too_large")
    fails(api_client, method, b" " * (5 * MiB), 413, "request_too_large")


@pytest.mark.parametrize("method", METHODS)
def test_body_of_exactly_1_mib_is_accepted(api_client, group, method):
    response = send(api_client, method, padded(method, group, MiB))
    assert response.status_code == 200, response.content[:200]


@pytest.mark.parametrize("method", METHODS)
@override_settings(USERGROUPS={"MAX_BODY_BYTES": 100})
def test_body_limit_follows_the_setting(api_client, group, method):
    fails(api_client, method, padded(method, group, 101), 413, "request_too_large")
    assert send(api_client, method, padded(method, group, 100)).status_code == 200


@pytest.mark.parametrize("method", METHODS)
@override_settings(USERGROUPS={"MAX_BODY_BYTES": 100})
def test_too_large_even_when_content_length_claims_more_than_is_sent(api_client, group, method):
    # Refused on the header alone, before anything is read.
    body = padded(method, group, 90)
    fails(api_client, method, body, 413, "request_too_large", CONTENT_LENGTH="101")
    fails(api_client, method, body, 413, "request_too_large", CONTENT_LENGTH=str(10**30))


@pytest.mark.parametrize("method", METHODS)
@override_settings(USERGROUPS={"MAX_BODY_BYTES": 100})
def test_content_length_claiming_less_than_is_sent(api_client, group, method):
    # Only the declared bytes are read: the request is a truncated body, never more
    # than the limit is read, and the rest is not taken as part of it.
    body = padded(method, group, 10_000)
    fails(api_client, method, body, 400, "parse_error", CONTENT_LENGTH="60")


@pytest.mark.parametrize("content_length", ["-1", "abc", "1e3", ""])
@pytest.mark.parametrize("method", METHODS)
def test_content_length_that_is_not_a_size_is_no_server_error(
    api_client, group, method, content_length
):
    with database_unchanged():
        response = send(
            api_client, method, valid_body(method, group), CONTENT_LENGTH=content_length
        )
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] in {"parse_error", "invalid"}


# --- 415 ----------------------------------------------------------------------------------

NOT_JSON_TYPES = [
    "text/plain",
    "text/plain; charset=utf-8",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=BoUnDaRy",
    "application/octet-stream",
    "application/xml",
    "text/json",
    "application/json-patch+json",
    "application/*",
    "*/*",
    "",  # no content type at all, with a body
]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("content_type", NOT_JSON_TYPES)
def test_body_that_is_not_json_by_its_content_type(api_client, group, method, content_type):
    body = json.dumps(valid_body(method, group))
    fails(api_client, method, body, 415, "unsupported_media_type", content_type=content_type)


@pytest.mark.parametrize("method", METHODS)
def test_form_and_multipart_bodies(api_client, group, method):
    data = valid_body(method, group)
    multipart = encode_multipart(BOUNDARY, data)
    fails(
        api_client, method, multipart, 415, "unsupported_media_type", content_type=MULTIPART_CONTENT
    )
    form = urlencode(data)
    fails(
        api_client,
        method,
        form,
        415,
        "unsupported_media_type",
        content_type="application/x-www-form-urlencoded",
    )


def test_text_body_with_a_query_string_is_still_415(api_client):
    fails(
        api_client,
        "GET",
        b"user_group_id=a",
        415,
        "unsupported_media_type",
        path=API_URL + "?user_group_id=a",
        content_type="text/plain",
    )


# --- No failure is a 500 ---------------------------------------------------------------------

NASTY_BODIES = [
    b"",
    b"{}",
    b"\x00" * 100,
    b"\xff" * 100,
    b"\xef\xbb\xbf",
    b"{" * 1000,
    b"}" * 1000,
    b'{"user_group_id": ' * 50_000,
    b"[" * 1_000_000,
    b'{"a":[' * 200_000,
    b'{"user_group_id": "\\u0000"}',
    b'{"user_group_id": "\\ud800"}',
    b'{"user_group_id": "\\udc00\\ud800"}',
    b'{"user_group_id": "a", "name": "\\ud83d"}',
    b'{"user_group_id": "\\ud83d\\ude00"}',
    b'{"user_group_id": 1e400, "name": -1e400, "current_token": 1e400}',
    b'{"user_group_id": "a", "properties": {"x": 1e400}}',
    b'{"user_group_id": "a", "properties": {"x": -0.0, "y": 1e-400, "z": 123456789012345678901234567890}}',
    b'{"user_group_id": "a", "properties": {"x": ' + b"9" * 4300 + b"}}",
    b'{"user_group_id": "a", "properties": {"x": ' + b"9" * 4301 + b"}}",
    b'{"user_group_id": "a", "mapping": {"s": ' + b"9" * 4300 + b"}}",
    b'{"user_group_id": "a", "mapping": {"s": -1e400}}',
    b'{"user_group_id": "a", "mapping": {"__proto__": "x", "constructor": "y"}}',
    b'{"user_group_id": "a", "mapping": {"s": "a", "s": "b"}}',
    b'{"user_group_id": "a", "user_group_id": "b"}',
    b'{"user_group_id": "a", "properties": {"a": ' + b"[" * 31 + b"]" * 31 + b"}}",
    json.dumps({"user_group_id": "a", "properties": {"k": [0] * 100_000}}).encode(),
    json.dumps({"user_group_id": "a", "properties": {f"k{n}": n for n in range(50_000)}}).encode(),
    json.dumps({"user_group_id": "a", "mapping": {f"s{n}": n for n in range(1000)}}).encode(),
    json.dumps({f"k{n}": n for n in range(50_000)}).encode(),
    json.dumps({"user_group_id": "'; DROP TABLE usergroups_usergroup; --"}).encode(),
    json.dumps({"user_group_id": "%s %% {} \\x00 $1 ?"}).encode(),
    json.dumps({"current_token": "ugt_" + "A" * 43, "user_group_id": ["x"] * 1000}).encode(),
    json.dumps({"current_token": "ugt_" + "\u00e9" * 43}).encode(),
    json.dumps({"current_token": "ugk_" + "A" * 43}).encode(),
    json.dumps({"current_token": {"$ne": None}}).encode(),
    '{"user_group_id": "\u2028\u2029\ufeff\ufffe\uffff"}'.encode(),
    '{"user_group_id": "a"}'.encode("utf-32"),
]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("body", NASTY_BODIES, ids=range(len(NASTY_BODIES)))
@pytest.mark.parametrize("content_type", ["application/json", "text/plain"])
def test_no_body_makes_a_server_error(api_client, method, body, content_type):
    response = send(api_client, method, body, content_type=content_type)
    assert response.status_code < 500, response.content[:300]
    assert response["Content-Type"] == "application/json"
    parsed = response.json()
    assert parsed["success"] == (1 if response.status_code == 200 else 0)
    assert b"Traceback" not in response.content

"""POST /api/user/embed-token: every rule and bad input of CONTRACT section 6."""

import json
import time
from datetime import UTC, datetime

import jwt
import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from tests.support.api import assert_error, client_for, send
from tests.support.embed import EMBED_URL, mint
from tests.support.factories import APIKeyFactory, UserGroupFactory
from tests.support.queries import READS, WRITES, statements
from usergroups import services
from usergroups.embed import keys

ANSWER_KEYS = {"success", "embed_token", "expires_in", "expires_at", "user_group"}


def claims_of(token):
    return jwt.decode(token, options={"verify_signature": False})


def test_mint_answers_the_contract_shape(api_client, group):
    before = int(time.time())
    response = mint(api_client, {"user_group_id": group.provided_id})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == ANSWER_KEYS and body["success"] == 1
    assert body["expires_in"] == 900
    assert body["user_group"] == {
        "team_id": group.pk,
        "name": group.name,
        "provided_id": group.provided_id,
    }
    token = body["embed_token"]
    header = jwt.get_unverified_header(token)
    assert header["alg"] == "EdDSA" and header["kid"] == keys.signing_key().kid
    claims = claims_of(token)
    assert set(claims) == {
        *("iss", "aud", "sub", "iat", "exp", "jti", "user_group_id", "gen"),
        *("wid", "wgen", "bnd", "key"),  # what else it is bound to (CONTRACT 6a)
    }
    assert claims["aud"] == "usergroups-embed" and claims["iss"] == "usergroups"
    assert claims["sub"] == str(group.pk) and claims["user_group_id"] == group.provided_id
    assert claims["exp"] - claims["iat"] == 900 and before <= claims["iat"] <= time.time()
    expires_at = datetime.fromtimestamp(claims["exp"], UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert body["expires_at"] == expires_at


def test_optional_claims_are_carried(api_client, group):
    body = {
        "user_group_id": group.provided_id,
        "resource": "sales",
        "origin": "https://App.Example.com:443",
        "expires_in": 60,
        "params": {"region": "US", "year": 2026},
    }
    response = mint(api_client, body)
    assert response.json()["expires_in"] == 60
    claims = claims_of(response.json()["embed_token"])
    assert claims["resource"] == "sales"
    assert claims["origin"] == "https://app.example.com"  # serialized as browsers send it
    assert claims["params"] == {"region": "US", "year": 2026}
    assert claims["exp"] - claims["iat"] == 60


def test_the_token_holds_no_secret_and_no_properties(api_client, api_key, group):
    token = mint(api_client, {"user_group_id": group.provided_id}).json()["embed_token"]
    text = json.dumps(claims_of(token)) + json.dumps(jwt.get_unverified_header(token))
    assert group.token not in token and api_key.key not in token
    assert "region" not in text  # the group's properties stay on the server


def test_each_token_has_its_own_jti(api_client, group):
    tokens = {mint(api_client, {"user_group_id": group.provided_id}).json()["embed_token"]}
    tokens.add(mint(api_client, {"user_group_id": group.provided_id}).json()["embed_token"])
    assert len({claims_of(token)["jti"] for token in tokens}) == 2


@override_settings(USERGROUPS={"EMBED_TOKEN_SECONDS": 120, "EMBED_TOKEN_AUDIENCE": "cube"})
def test_settings_give_the_default_lifetime_and_audience(api_client, group):
    response = mint(api_client, {"user_group_id": group.provided_id})
    claims = claims_of(response.json()["embed_token"])
    assert response.json()["expires_in"] == 120 and claims["aud"] == "cube"


def test_unknown_group_is_404(api_client, group):
    assert_error(mint(api_client, {"user_group_id": "nobody"}), 404, "not_found")


def test_another_workspaces_group_is_404(other_api_client, group):
    assert_error(mint(other_api_client, {"user_group_id": group.provided_id}), 404, "not_found")


def test_trailing_slash_is_the_same_operation(api_client, group):
    response = mint(api_client, {"user_group_id": group.provided_id}, path=EMBED_URL + "/")
    assert response.status_code == 200


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("user_group_id", None),
        ("user_group_id", ""),
        ("user_group_id", 12),
        ("user_group_id", "x" * 256),
        ("user_group_id", "a\x00b"),
        ("resource", ""),
        ("resource", "r" * 256),
        ("resource", 7),
        ("resource", None),
        ("resource", ["sales"]),
        ("resource", "a\x00"),
        ("origin", "https://example.com/"),
        ("origin", "https://example.com/path"),
        ("origin", "https://example.com?x=1"),
        ("origin", "https://example.com#x"),
        ("origin", "https://user@example.com"),
        ("origin", "https://user:pw@example.com"),
        ("origin", "ftp://example.com"),
        ("origin", "example.com"),
        ("origin", "//example.com"),
        ("origin", "https://"),
        ("origin", "https://example.com:"),
        ("origin", "https://example.com:0"),
        ("origin", "https://example.com:65536"),
        ("origin", "https://example.com:http"),
        ("origin", "https://exa mple.com"),
        ("origin", "https://exämple.com"),
        ("origin", "https://example.com\n"),
        ("origin", " https://example.com"),
        ("origin", "null"),
        ("origin", "https://" + "a" * 250 + ".com"),
        ("origin", 42),
        ("origin", None),
        ("expires_in", 29),
        ("expires_in", 0),
        ("expires_in", -60),
        ("expires_in", 86401),
        ("expires_in", 60.5),
        ("expires_in", "60"),
        ("expires_in", True),
        ("expires_in", None),
        ("params", []),
        ("params", "region=EU"),
        ("params", None),
        ("params", {"big": "x" * 2048}),
        ("params", {"nul": "a\x00"}),
    ],
)
def test_bad_input_is_invalid_naming_the_field(api_client, group, field, value):
    body = {"user_group_id": group.provided_id, field: value}
    if field == "user_group_id" and value is None:
        del body["user_group_id"]
    assert_error(mint(api_client, body), 400, "invalid", fields=[field])


@pytest.mark.parametrize("value", [30, 86400])
def test_expires_in_bounds_are_inclusive(api_client, group, value):
    response = mint(api_client, {"user_group_id": group.provided_id, "expires_in": value})
    assert response.status_code == 200 and response.json()["expires_in"] == value


@pytest.mark.parametrize("value", [7252.0, 30.0, 86400.0])
def test_expires_in_takes_a_whole_number_written_with_a_fraction(api_client, group, value):
    """JSON Schema's ``integer`` includes ``7252.0``, and a client's JSON library may
    write a whole number so (issue 33): the token lives that many seconds."""
    response = mint(api_client, {"user_group_id": group.provided_id, "expires_in": value})
    assert response.status_code == 200, response.content
    answer = response.json()
    assert answer["expires_in"] == int(value) and type(answer["expires_in"]) is int
    claims = jwt.decode(answer["embed_token"], options={"verify_signature": False})
    assert claims["exp"] - claims["iat"] == int(value)


@override_settings(USERGROUPS={"EMBED_TOKEN_MAX_SECONDS": 300})
def test_expires_in_is_bounded_by_the_setting(api_client, group):
    body = {"user_group_id": group.provided_id, "expires_in": 301}
    assert_error(mint(api_client, body), 400, "invalid", fields=["expires_in"])


@pytest.mark.parametrize(
    "origin",
    ["http://localhost:8000", "https://a.b-c.example", "http://127.0.0.1", "https://[::1]:8443"],
)
def test_good_origins_are_taken(api_client, group, origin):
    response = mint(api_client, {"user_group_id": group.provided_id, "origin": origin})
    assert response.status_code == 200
    assert claims_of(response.json()["embed_token"])["origin"] == origin


def test_params_of_exactly_2_kib_are_taken(api_client, group):
    params = {"k": "x" * (2048 - len('{"k":""}'))}
    response = mint(api_client, {"user_group_id": group.provided_id, "params": params})
    assert response.status_code == 200


def test_every_token_stays_within_4_kib(api_client, group):
    """The largest inputs each field takes still make a token of at most 4 KiB, or a 400."""
    wide = "\U0001f600"  # 4 bytes of UTF-8
    group_id = wide * 255
    UserGroupFactory.create(workspace=group.workspace, provided_id=group_id, name="wide")
    body = {
        "user_group_id": group_id,
        "resource": wide * 255,
        "origin": "https://" + ".".join(["a" * 60] * 4),
        "params": {"k": "y" * 2000},
    }
    response = mint(api_client, body)
    assert_error(response, 400, "invalid", fields=["params", "resource", "origin"])
    del body["params"]
    response = mint(api_client, body)
    assert response.status_code == 200 and len(response.json()["embed_token"]) <= 4096


def test_bad_input_changes_nothing(api_client, group):
    before = services.groups.find_group(group.workspace_id, group.provided_id)
    mint(api_client, {"user_group_id": group.provided_id, "expires_in": 1})
    assert services.groups.find_group(group.workspace_id, group.provided_id) == before


def test_the_embed_scope_is_needed(workspace, group):
    key = APIKeyFactory.create(workspace=workspace)
    key.set_scopes({"read", "write", "rotate"})
    key.save()
    error = assert_error(
        mint(client_for(key.key), {"user_group_id": group.provided_id}), 403, "permission_denied"
    )
    assert "embed" in error["message"]


def test_no_key_is_401(anon_api_client, group):
    response = mint(anon_api_client, {"user_group_id": group.provided_id})
    assert_error(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_other_methods_are_405(api_client, method):
    assert_error(send(api_client, method, {}, path=EMBED_URL), 405, "method_not_allowed")


def test_malformed_json_is_a_parse_error(api_client):
    assert_error(send(api_client, "POST", b"{", path=EMBED_URL), 400, "parse_error")
    assert_error(send(api_client, "POST", b"[1]", path=EMBED_URL), 400, "parse_error")
    response = send(api_client, "POST", b'{"expires_in": NaN}', path=EMBED_URL)
    assert_error(response, 400, "parse_error")


def test_a_body_that_is_not_json_is_415(api_client, group):
    response = send(
        api_client, "POST", b"user_group_id=x", path=EMBED_URL, content_type="text/plain"
    )
    assert_error(response, 415, "unsupported_media_type")


def the_event_insert_only(queries) -> bool:
    """Every statement but one is a read; that one inserts the mint's audit event."""
    (write,) = statements(queries, WRITES)
    return (
        write.startswith("INSERT")
        and "usergroups_auditevent" in write
        and (len(statements(queries, READS)) == len(queries) - 1)
    )


def test_mint_reads_key_and_group_and_writes_its_event(
    api_client, recently_used_key, group, django_assert_num_queries
):
    # The key, the group, the event's INSERT and the webhooks that may receive it.
    with CaptureQueriesContext(connection) as queries:
        with django_assert_num_queries(4):
            assert mint(api_client, {"user_group_id": group.provided_id}).status_code == 200
    assert the_event_insert_only(queries)


@pytest.mark.django_db(transaction=True)
def test_a_mint_as_a_server_runs_it_writes_its_event_only(
    api_client, recently_used_key, group, django_assert_max_num_queries
):
    """No transaction open: the key, the group, the event's INSERT and the webhooks that
    may receive it (with SQLite's BEGIN and COMMIT around them): the event is the mint's
    one write."""
    with CaptureQueriesContext(connection) as queries:
        with django_assert_max_num_queries(6):
            assert mint(api_client, {"user_group_id": group.provided_id}).status_code == 200
    (write,) = statements(queries, ("INSERT", "UPDATE", "DELETE", "REPLACE"))
    assert write.startswith("INSERT") and "usergroups_auditevent" in write
    assert len(statements(queries, READS)) == 3


def test_mint_of_a_deep_group_costs_two_reads_and_its_event(
    api_client, recently_used_key, workspace, django_assert_num_queries
):
    """The key, then the group with its ancestors in one statement, at any depth."""
    parent = UserGroupFactory.create(workspace=workspace)
    child = UserGroupFactory.create(workspace=workspace, parent=parent)
    grandchild = UserGroupFactory.create(workspace=workspace, parent=child)
    with CaptureQueriesContext(connection) as queries, django_assert_num_queries(4):
        assert mint(api_client, {"user_group_id": grandchild.provided_id}).status_code == 200
    assert the_event_insert_only(queries)


def test_a_mints_writes_are_the_keys_last_used_time_and_its_event(api_client, api_key, group):
    with CaptureQueriesContext(connection) as queries:
        assert mint(api_client, {"user_group_id": group.provided_id}).status_code == 200
    writes = statements(queries, WRITES)
    assert len(writes) == 2
    assert "last_used_at" in writes[0] and "usergroups_apikey" in writes[0]
    assert writes[1].startswith("INSERT") and "usergroups_auditevent" in writes[1]
    assert len(statements(queries, READS)) + len(writes) == len(queries)

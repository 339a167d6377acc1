"""EmbedTokenAuthentication: what a host's dashboard endpoint accepts and refuses.

Forgeries are built by hand (tests.support.jose-free: base64url and json), so no code
path of the library under test helps make them.
"""

import base64
import hashlib
import hmac
import json
import time

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from django.test import override_settings

from tests.support.api import assert_error
from tests.support.embed import SalesView, clock_moved, dashboard, minted
from tests.support.factories import UserGroupFactory
from usergroups import services
from usergroups.auth.group_token import GroupTokenAuthentication
from usergroups.embed import keys


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def parts(token):
    header, payload, signature = token.split(".")
    return (
        json.loads(base64.urlsafe_b64decode(header + "==")),
        json.loads(base64.urlsafe_b64decode(payload + "==")),
        signature,
    )


def compact(header, claims, signature=""):
    head = b64(json.dumps(header).encode()) + "." + b64(json.dumps(claims).encode())
    return head, f"{head}.{signature}"


def refused(token, **headers):
    response = dashboard(token, **headers)
    assert_error(response, 401, "authentication_failed")
    assert response["WWW-Authenticate"] == 'Embed error="authentication_failed"'


@pytest.fixture
def token(api_client, group):
    return minted(api_client, group.provided_id)


def test_a_good_token_gives_the_variables(token, group):
    response = dashboard(token)
    assert response.status_code == 200
    assert response.data == {"variables": {"region": "EU"}}


def test_a_good_token_costs_one_query(token, django_assert_num_queries):
    with django_assert_num_queries(1):
        assert dashboard(token).status_code == 200


def test_a_group_at_any_depth_costs_one_query(api_client, workspace, django_assert_num_queries):
    """The group and its ancestors come in the one statement (sql.GROUP_BY_TEAM_ID)."""
    root = UserGroupFactory.create(workspace=workspace, properties={"tier": 1, "region": "EU"})
    middle = UserGroupFactory.create(workspace=workspace, parent=root, properties={"a": 1})
    child = UserGroupFactory.create(workspace=workspace, parent=middle, properties={"region": "US"})
    token = minted(api_client, child.provided_id, params={"year": 2026})
    with django_assert_num_queries(1):
        response = dashboard(token)
    assert response.data["variables"] == {"tier": 1, "a": 1, "region": "US", "year": 2026}


def test_params_are_laid_over_the_computed_properties(api_client, group):
    token = minted(api_client, group.provided_id, params={"region": "US", "extra": [1, 2]})
    assert dashboard(token).data["variables"] == {"region": "US", "extra": [1, 2]}


def test_forged_signature_costs_no_query(token, django_assert_num_queries):
    header, claims, _signature = parts(token)
    forger = ed25519.Ed25519PrivateKey.generate()
    head, _ = compact(header, claims)
    forged = f"{head}.{b64(forger.sign(head.encode()))}"
    with django_assert_num_queries(0):
        refused(forged)


def test_tampered_payload_is_refused(api_client, group, token, django_assert_num_queries):
    other = UserGroupFactory.create(workspace=group.workspace)
    header, claims, signature = parts(token)
    _, tampered = compact(header, {**claims, "sub": str(other.pk)}, signature)
    with django_assert_num_queries(0):
        refused(tampered)
    _, tampered = compact(header, {**claims, "exp": claims["exp"] + 3600}, signature)
    refused(tampered)


def test_alg_none_is_refused(token, django_assert_num_queries):
    header, claims, _signature = parts(token)
    for alg in ("none", "None", "NONE"):
        _, unsigned = compact({**header, "alg": alg}, claims)
        with django_assert_num_queries(0):
            refused(unsigned)
        refused(unsigned + "AAAA")


def test_hs256_with_the_public_key_as_secret_is_refused(token, django_assert_num_queries):
    header, claims, _signature = parts(token)
    public = keys.signing_key().public_key
    secrets = [
        public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw),
        public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
        json.dumps(keys.signing_key().jwk).encode(),
    ]
    for secret in secrets:
        head, _ = compact({**header, "alg": "HS256"}, claims)
        mac = hmac.new(secret, head.encode(), hashlib.sha256).digest()
        with django_assert_num_queries(0):
            refused(f"{head}.{b64(mac)}")


def test_an_unknown_or_missing_kid_is_refused(token):
    header, claims, signature = parts(token)
    _, wrong = compact({**header, "kid": "not-a-key"}, claims, signature)
    refused(wrong)
    _, missing = compact({k: v for k, v in header.items() if k != "kid"}, claims, signature)
    refused(missing)


def signed(claims, **header):
    """``claims`` signed with the server's own key: only the claims can be wrong."""
    key = keys.signing_key()
    return jwt.encode(
        claims, key.private_key, algorithm=key.alg, headers={"kid": key.kid, **header}
    )


def good_claims(group, **changes):
    now = int(time.time())
    claims = {
        "iss": "usergroups",
        "aud": "usergroups-embed",
        "sub": str(group.pk),
        "iat": now,
        "exp": now + 60,
        "jti": "j",
        "user_group_id": group.provided_id,
        "gen": 0,
        "wid": group.workspace_id,
        "wgen": 0,
        "bnd": group.embed_binding,
    }
    claims.update(changes)
    return {name: value for name, value in claims.items() if value is not None}


def test_server_signed_claims_pass(group):
    assert dashboard(signed(good_claims(group))).status_code == 200


@pytest.mark.parametrize(
    "changes",
    [
        {"aud": "someone-else"},
        {"aud": ["other", "more"]},
        {"iss": "another-issuer"},
        {"aud": None},
        {"iss": None},
        {"exp": None},
        {"iat": None},
        {"jti": None},
        {"sub": None},
        {"gen": None},
        {"user_group_id": None},
        {"sub": "x1"},
        {"sub": 1},
        {"gen": "0"},
        {"gen": True},
        {"wid": None},
        {"wgen": None},
        {"bnd": None},
        {"wid": "1"},
        {"wgen": 0.0},
        {"bnd": 1},
        {"key": 1},
        {"end_user_id": 1},
        {"end_user_id": "u"},  # without its binding and generation
        {"params": ["a"]},
        {"resource": 3},
        {"iat": int(time.time()) + 3600, "exp": int(time.time()) + 7200},
    ],
)
def test_wrong_claims_are_refused(group, changes, django_assert_num_queries):
    with django_assert_num_queries(0):
        refused(signed(good_claims(group, **changes)))


@pytest.mark.parametrize(
    "token",
    ["x", "a.b.c", "eyJ.eyJ.", "eyJ.eyJ.x", "eyJhbGciOiJub25lIn0", "eyJ" + "A" * 5000 + ".eyJ.A"],
)
def test_malformed_tokens_cost_no_query(db, token, django_assert_num_queries):
    with django_assert_num_queries(0):
        refused(token)


def test_an_expired_token_is_token_expired_without_a_query(
    api_client, group, django_assert_num_queries
):
    with clock_moved(-61):
        token = minted(api_client, group.provided_id, expires_in=60)
    with django_assert_num_queries(0):
        response = dashboard(token)
    assert_error(response, 401, "token_expired")
    assert response["WWW-Authenticate"] == 'Embed error="token_expired"'


def test_a_token_is_good_until_it_expires(api_client, group):
    with clock_moved(-58):
        token = minted(api_client, group.provided_id, expires_in=60)
    assert dashboard(token).status_code == 200


def test_a_forged_expired_token_is_authentication_failed(api_client, group):
    """Expiry is told only for a token whose signature holds."""
    with clock_moved(-120):
        token = minted(api_client, group.provided_id, expires_in=60)
    header, claims, signature = parts(token)
    _, tampered = compact(header, {**claims, "jti": "other"}, signature)
    refused(tampered)


def test_a_deleted_groups_token_is_refused(api_client, group, token):
    services.groups.delete_group(group.workspace_id, provided_id=group.provided_id)
    refused(token)


def test_another_scheme_is_left_to_the_next_class(token, group):
    response = dashboard(group.token, scheme="GroupToken")
    assert_error(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"] == "Embed"


def test_no_header_is_not_authenticated(db):
    response = dashboard(None)
    assert_error(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"] == "Embed"


# --- Origin ---------------------------------------------------------------------------


@pytest.fixture
def locked(api_client, group):
    return minted(api_client, group.provided_id, origin="https://shop.example")


@pytest.mark.parametrize("origin", ["https://shop.example", "https://SHOP.example:443"])
def test_the_tokens_origin_is_let_in(locked, origin):
    assert dashboard(locked, HTTP_ORIGIN=origin).status_code == 200


def test_no_origin_header_is_not_refused(locked):
    assert dashboard(locked).status_code == 200


@pytest.mark.parametrize(
    "origin",
    [
        "https://evil.example",
        "http://shop.example",
        "https://shop.example:8443",
        "https://shop.example.evil",
        "null",
        "",
        "https://shop.example/",
    ],
)
def test_another_origin_is_403(locked, origin):
    assert_error(dashboard(locked, HTTP_ORIGIN=origin), 403, "origin_not_allowed")


def test_a_token_without_origin_is_not_locked(token):
    assert dashboard(token, HTTP_ORIGIN="https://anywhere.example").status_code == 200


# --- Resource -------------------------------------------------------------------------


def test_a_token_for_the_views_resource_is_let_in(api_client, group):
    token = minted(api_client, group.provided_id, resource="sales")
    assert dashboard(token, view=SalesView).status_code == 200


def test_a_token_for_another_resource_is_403(api_client, group):
    token = minted(api_client, group.provided_id, resource="hr")
    assert_error(dashboard(token, view=SalesView), 403, "permission_denied")


def test_a_token_without_resource_is_not_limited(token):
    assert dashboard(token, view=SalesView).status_code == 200


def test_a_resource_token_works_where_no_resource_is_declared(api_client, group):
    token = minted(api_client, group.provided_id, resource="hr")
    assert dashboard(token).status_code == 200


# --- Group tokens on the embed side ----------------------------------------------------


def test_group_tokens_are_accepted_by_default(group):
    from rest_framework.test import APIRequestFactory

    request = APIRequestFactory().get("/", HTTP_AUTHORIZATION=f"GroupToken {group.token}")
    assert GroupTokenAuthentication().authenticate(request)[1].team_id == group.pk


@override_settings(USERGROUPS={"EMBED_ACCEPT_GROUP_TOKENS": False})
def test_group_tokens_can_be_turned_off(group, django_assert_num_queries):
    from rest_framework.exceptions import AuthenticationFailed
    from rest_framework.test import APIRequestFactory

    request = APIRequestFactory().get("/", HTTP_AUTHORIZATION=f"GroupToken {group.token}")
    with django_assert_num_queries(0), pytest.raises(AuthenticationFailed):
        GroupTokenAuthentication().authenticate(request)


def test_the_scheme_word_is_matched_in_any_case(token):
    assert dashboard(token, scheme="embed").status_code == 200
    assert dashboard(token, scheme="EMBED").status_code == 200

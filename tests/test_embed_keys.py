"""The keys of embed tokens: derived from the sealing secret (or given), cached per
secret, published in the JWK Set with the fallback secrets' keys, rotated safely."""

import hashlib

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from django.conf import settings
from django.test import override_settings

from tests.support.api import assert_error, send
from tests.support.embed import JWKS_URL, clock_moved, dashboard, introspect, minted
from usergroups.embed import keys, tokens

OLD_SECRET = "o" * 50
NEW_SECRET = "n" * 50


def raw_private(key: keys.SigningKey) -> bytes:
    return key.private_key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )


def pem(private_key) -> str:
    return private_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def test_the_key_is_derived_deterministically_and_never_is_the_secret():
    key = keys.derived_key(NEW_SECRET)
    keys.derived_key.cache_clear()
    again = keys.derived_key(NEW_SECRET)
    assert again is not key and raw_private(again) == raw_private(key) and again.kid == key.kid
    seed = raw_private(key)
    assert seed not in (NEW_SECRET.encode()[:32], hashlib.sha256(NEW_SECRET.encode()).digest())
    assert keys.derived_key(OLD_SECRET).kid != key.kid


def test_the_signing_key_follows_the_sealing_secret():
    with override_settings(SECRET_KEY=NEW_SECRET):
        from_secret_key = keys.signing_key()
    with override_settings(USERGROUPS={"TOKEN_SECRET": OLD_SECRET}):
        from_token_secret = keys.signing_key()
    assert from_secret_key.kid == keys.derived_key(NEW_SECRET).kid
    assert from_token_secret.kid == keys.derived_key(OLD_SECRET).kid
    assert keys.signing_key().kid == keys.derived_key(settings.SECRET_KEY).kid


def test_derivation_is_cached_not_done_per_request(api_client, group):
    token = minted(api_client, group.provided_id)
    before = keys.derived_key.cache_info()
    for _ in range(3):
        assert dashboard(token).status_code == 200
    after = keys.derived_key.cache_info()
    assert after.misses == before.misses and after.hits > before.hits


def test_the_kid_is_the_rfc_7638_thumbprint():
    import base64
    import json

    key = keys.signing_key()
    members = {name: key.jwk[name] for name in ("crv", "kty", "x")}
    canonical = json.dumps(members, sort_keys=True, separators=(",", ":")).encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(canonical).digest()).rstrip(b"=").decode()
    assert key.kid == digest


# --- The JWK Set ------------------------------------------------------------------------


def test_the_jwk_set_needs_no_key_and_may_be_cached(client):
    response = client.get(JWKS_URL)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response["Cache-Control"] == "public, max-age=300"
    [jwk] = response.json()["keys"]
    assert jwk == keys.signing_key().jwk
    assert set(jwk) == {"kty", "crv", "x", "kid", "alg", "use"}  # no private member ("d")


def test_the_jwk_set_ignores_a_bad_key(client):
    """A wrong Authorization header does not stand in the way of a public document."""
    response = client.get(JWKS_URL, HTTP_AUTHORIZATION="Token nonsense")
    assert response.status_code == 200


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_the_jwk_set_is_read_only(client, method):
    assert_error(send(client, method, {}, path=JWKS_URL), 405, "method_not_allowed")


# --- Rotation of the secret --------------------------------------------------------------


@pytest.fixture
def old_token(api_client, group):
    with override_settings(SECRET_KEY=OLD_SECRET):
        return minted(api_client, group.provided_id)


def rotated(fallbacks):
    return override_settings(SECRET_KEY=NEW_SECRET, SECRET_KEY_FALLBACKS=fallbacks)


def test_the_fallback_secrets_keys_stay_in_the_jwk_set(client):
    with rotated([OLD_SECRET]):
        kids = [jwk["kid"] for jwk in client.get(JWKS_URL).json()["keys"]]
    assert kids == [keys.derived_key(NEW_SECRET).kid, keys.derived_key(OLD_SECRET).kid]


def test_a_token_signed_before_a_rotation_verifies_until_it_expires(api_client, group, old_token):
    with rotated([OLD_SECRET]):
        assert dashboard(old_token).status_code == 200
        assert introspect(api_client, old_token).json()["active"] is True
        new_token = minted(api_client, group.provided_id)
        assert tokens.verify(old_token).generation == 0
    header_kid = jwt.get_unverified_header(new_token)["kid"]
    assert header_kid == keys.derived_key(NEW_SECRET).kid  # the new secret signs


def test_an_expired_old_token_is_token_expired(api_client, group):
    with override_settings(SECRET_KEY=OLD_SECRET), clock_moved(-120):
        token = minted(api_client, group.provided_id, expires_in=60)
    with rotated([OLD_SECRET]):
        assert_error(dashboard(token), 401, "token_expired")


def test_once_the_fallback_is_dropped_old_tokens_are_refused(api_client, old_token):
    with rotated([]):
        assert_error(dashboard(old_token), 401, "authentication_failed")
        assert introspect(api_client, old_token).json() == {"success": 1, "active": False}


def test_token_secret_fallbacks_work_the_same(api_client, group):
    with override_settings(USERGROUPS={"TOKEN_SECRET": OLD_SECRET}):
        token = minted(api_client, group.provided_id)
    with override_settings(
        USERGROUPS={"TOKEN_SECRET": NEW_SECRET, "TOKEN_SECRET_FALLBACKS": [OLD_SECRET]}
    ):
        assert dashboard(token).status_code == 200
    with override_settings(USERGROUPS={"TOKEN_SECRET": NEW_SECRET}):
        assert dashboard(token).status_code == 401


# --- A given key -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "alg", "kty"),
    [
        (ed25519.Ed25519PrivateKey.generate, "EdDSA", "OKP"),
        (lambda: ec.generate_private_key(ec.SECP256R1()), "ES256", "EC"),
    ],
)
def test_a_given_key_signs_and_alone_verifies(api_client, group, client, make, alg, kty):
    derived = minted(api_client, group.provided_id)
    with override_settings(USERGROUPS={"EMBED_SIGNING_KEY": pem(make())}):
        [jwk] = client.get(JWKS_URL).json()["keys"]
        assert jwk["alg"] == alg and jwk["kty"] == kty and "d" not in jwk
        token = minted(api_client, group.provided_id)
        assert jwt.get_unverified_header(token)["alg"] == alg
        assert dashboard(token).status_code == 200
        assert dashboard(derived).status_code == 401  # the derived key is not in force
    assert dashboard(token).status_code == 401  # nor the given one, once removed


def test_an_unusable_given_key_raises():
    with pytest.raises(keys.SigningKeyError):
        keys.given_key("-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n")

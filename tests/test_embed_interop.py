"""A second, independent JOSE library (joserfc) verifies our embed tokens from the JWK
Set JSON alone, as Cube or any other service would: no code of ours on that side."""

import time
import warnings

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.test import override_settings
from joserfc import jwt
from joserfc.errors import BadSignatureError, ExpiredTokenError, JoseError
from joserfc.jwk import KeySet

from tests.support.embed import JWKS_URL, clock_moved, minted

ALGORITHMS = ["EdDSA", "ES256"]


def verify_elsewhere(client, token):
    """Verify ``token`` as an outside service does: fetch the JWK Set, check the
    signature, then ``exp``, ``iss`` and ``aud``; the claims."""
    key_set = KeySet.import_key_set(client.get(JWKS_URL).json())
    with warnings.catch_warnings():
        # joserfc flags "EdDSA" as superseded by RFC 9864's "Ed25519"; the contract and
        # PyJWT name it EdDSA, which every JOSE library (Cube's too) still verifies.
        warnings.simplefilter("ignore")
        decoded = jwt.decode(token, key_set, algorithms=ALGORITHMS)
    jwt.JWTClaimsRegistry(
        now=int(time.time()),
        iss={"essential": True, "value": "usergroups"},
        aud={"essential": True, "value": "usergroups-embed"},
        exp={"essential": True},
        sub={"essential": True},
    ).validate(decoded.claims)
    return decoded.claims


def test_joserfc_verifies_a_minted_token(client, api_client, group):
    token = minted(api_client, group.provided_id, resource="sales", params={"region": "US"})
    claims = verify_elsewhere(client, token)
    assert claims["sub"] == str(group.pk) and claims["user_group_id"] == group.provided_id
    assert claims["resource"] == "sales" and claims["params"] == {"region": "US"}


def test_joserfc_computes_the_same_kid(client):
    [key] = KeySet.import_key_set(client.get(JWKS_URL).json()).keys
    assert key.thumbprint() == key.kid


def test_joserfc_refuses_a_tampered_token(client, api_client, group):
    token = minted(api_client, group.provided_id)
    header, payload, signature = token.split(".")
    flipped = signature[:-2] + ("A" if signature[-2] != "A" else "B") + signature[-1]
    with pytest.raises(BadSignatureError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        verify_elsewhere(client, f"{header}.{payload}.{flipped}")


def test_joserfc_refuses_an_expired_token(client, api_client, group):
    with clock_moved(-120):
        token = minted(api_client, group.provided_id, expires_in=60)
    with pytest.raises(ExpiredTokenError):
        verify_elsewhere(client, token)


def test_joserfc_verifies_an_old_token_with_the_fallback_key(client, api_client, group):
    with override_settings(SECRET_KEY="o" * 50):
        token = minted(api_client, group.provided_id)
    with override_settings(SECRET_KEY="n" * 50, SECRET_KEY_FALLBACKS=["o" * 50]):
        assert verify_elsewhere(client, token)["sub"] == str(group.pk)
    with override_settings(SECRET_KEY="n" * 50), pytest.raises(JoseError):
        verify_elsewhere(client, token)


def test_joserfc_verifies_es256_tokens_of_a_given_key(client, api_client, group):
    private = ec.generate_private_key(ec.SECP256R1())
    text = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    with override_settings(USERGROUPS={"EMBED_SIGNING_KEY": text}):
        token = minted(api_client, group.provided_id)
        assert verify_elsewhere(client, token)["sub"] == str(group.pk)

"""The keys that sign and verify embed tokens, and their JWK Set.

By default the signing key is an Ed25519 key derived from the sealing secret
(``TOKEN_SECRET``, else ``SECRET_KEY``) with HKDF under a label of its own: every
process of a site derives the same key without sharing a file, the secret itself
never signs anything, and a key derived for one purpose says nothing about another.
Each fallback secret derives a key too: those verify (and are published in the JWK
Set) but never sign, so a secret rotation leaves older tokens valid until they expire.

A host may give a PEM private key instead (``EMBED_SIGNING_KEY``: Ed25519, or EC P-256
for ES256); then that key alone signs and verifies.

Derivation costs tens of microseconds, so keys are cached per secret (or PEM): a new
secret, e.g. under ``override_settings``, simply finds no cached key.
"""

import base64
import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.utils.encoding import force_bytes

from usergroups import crypto
from usergroups.conf import usergroups_settings

# HKDF's "info": what the derived bytes are for. Changing it changes every key.
_DERIVATION_LABEL = b"usergroups embed-token signing key v1 (Ed25519)"
_CACHED_KEYS = 32

PrivateKey = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey
PublicKey = ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey


class SigningKeyError(ValueError):
    """``EMBED_SIGNING_KEY`` is not a PEM private key of a supported kind."""


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class SigningKey:
    """A key pair with what JOSE calls it: ``alg``, ``kid`` and its public JWK."""

    alg: str
    kid: str
    private_key: PrivateKey = field(repr=False)
    public_key: PublicKey = field(repr=False)
    jwk: dict[str, str]

    @classmethod
    def of(cls, private_key: PrivateKey) -> "SigningKey":
        public_key = private_key.public_key()
        alg, members = _public_members(public_key)
        # RFC 7638: the SHA-256 of the required members, sorted, compact.
        canonical = json.dumps(members, sort_keys=True, separators=(",", ":"))
        kid = _b64(hashlib.sha256(canonical.encode("ascii")).digest())
        jwk = {**members, "kid": kid, "alg": alg, "use": "sig"}
        return cls(alg, kid, private_key, public_key, jwk)


def _public_members(public_key: PublicKey) -> tuple[str, dict[str, str]]:
    if isinstance(public_key, ed25519.Ed25519PublicKey):
        raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return "EdDSA", {"crv": "Ed25519", "kty": "OKP", "x": _b64(raw)}
    numbers = public_key.public_numbers()
    return "ES256", {
        "crv": "P-256",
        "kty": "EC",
        "x": _b64(numbers.x.to_bytes(32, "big")),
        "y": _b64(numbers.y.to_bytes(32, "big")),
    }


@lru_cache(maxsize=_CACHED_KEYS)
def derived_key(secret: str | bytes) -> SigningKey:
    """The Ed25519 key of a sealing secret (the same on every process)."""
    seed = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_DERIVATION_LABEL).derive(
        force_bytes(secret)
    )
    return SigningKey.of(ed25519.Ed25519PrivateKey.from_private_bytes(seed))


@lru_cache(maxsize=_CACHED_KEYS)
def given_key(pem: str | bytes) -> SigningKey:
    """The key of a PEM private key; :class:`SigningKeyError` unless Ed25519 or P-256."""
    try:
        private_key = serialization.load_pem_private_key(force_bytes(pem), password=None)
    except (ValueError, TypeError) as exc:
        raise SigningKeyError(f"not a PEM private key without a password ({exc})") from None
    if isinstance(private_key, ed25519.Ed25519PrivateKey):
        return SigningKey.of(private_key)
    if isinstance(private_key, ec.EllipticCurvePrivateKey) and isinstance(
        private_key.curve, ec.SECP256R1
    ):
        return SigningKey.of(private_key)
    raise SigningKeyError(f"a {type(private_key).__name__}; use Ed25519 or EC P-256")


def keyring() -> list[SigningKey]:
    """The keys in force: the signing key first, then those that only verify."""
    pem = usergroups_settings.EMBED_SIGNING_KEY
    if pem:
        return [given_key(pem)]
    keys: list[SigningKey] = []
    for secret in crypto.token_secrets():
        key = derived_key(secret)
        if all(known.kid != key.kid for known in keys):  # a fallback equal to the secret
            keys.append(key)
    return keys


def signing_key() -> SigningKey:
    return keyring()[0]


def jwk_set() -> dict[str, Any]:
    """The JWK Set (RFC 7517) of the public keys that verify current tokens."""
    return {"keys": [dict(key.jwk) for key in keyring()]}

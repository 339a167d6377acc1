"""Signing and verifying embed tokens: JWTs in compact JWS form.

Verification checks everything a token says about itself (shape, size, ``kid``,
``alg`` against the key's one algorithm, signature, ``exp``, ``iat``, ``aud``, ``iss``,
the claims' types) before anything is read from the database: a forged, expired or
malformed token costs no query. Whether the group still exists and the token's
generation is still current is the caller's one query (:mod:`usergroups.services.embed`).

PyJWT signs and, the first time a process sees a token, verifies it (``jwt.encode`` and
``jwt.decode``: no JOSE of our own). A token's signature is checked once per process
(:mod:`.verified` remembers the digests of exact tokens that passed); later requests with
the same bytes read its claims again and check them against the clock and the settings
here, on every verification: ``jwt.decode``'s generic handling cost more than the
Ed25519 check itself, and a dashboard sends the same token with every request.
"""

import base64
import json
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jwt
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from usergroups.conf import usergroups_settings
from usergroups.embed import keys, verified

#: The largest embed token, in bytes (CONTRACT section 6).
MAX_TOKEN_BYTES = 4096
#: The private claim holding the group's embed generation (see UserGroup.embed_generation).
GENERATION_CLAIM = "gen"
_REQUIRED = ["iss", "aud", "sub", "iat", "exp", "jti", "user_group_id", GENERATION_CLAIM]
# Three base64url parts, the first two JSON objects ("eyJ" is base64 of '{"').
_SHAPE = re.compile(r"eyJ[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+")


class InvalidEmbedToken(Exception):
    """Not a token of this server: malformed, forged, of another audience or issuer."""


class ExpiredEmbedToken(InvalidEmbedToken):
    """A token of this server whose ``exp`` has passed."""


class OriginRequired(InvalidEmbedToken):
    """A token without ``origin`` while ``EMBED_REQUIRE_ORIGIN`` is on."""


class TokenTooLarge(ValueError):
    """The claims would make a token over :data:`MAX_TOKEN_BYTES`."""


@dataclass(frozen=True)
class Claims:
    """A verified token's claims: the registered ones typed, all of them in ``raw``."""

    team_id: int
    user_group_id: str
    generation: int
    expires_at: datetime
    resource: str | None
    origin: str | None
    params: dict[str, Any]
    raw: dict[str, Any]


class _CompactUTF8(json.JSONEncoder):
    """Non-ASCII text as UTF-8, not ``\\uXXXX``: up to 6 times shorter in the token."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["ensure_ascii"] = False
        super().__init__(**kwargs)


def timestamp_text(seconds: int) -> str:
    """``exp`` as the API writes times: ISO 8601 in UTC, to the second."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@sensitive_variables("token")
def sign(
    *,
    team_id: int,
    user_group_id: str,
    generation: int,
    issued_at: int,
    expires_in: int,
    resource: str | None = None,
    origin: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> str:
    """A new token with the current signing key; :class:`TokenTooLarge` past the limit."""
    claims: dict[str, Any] = {
        "iss": usergroups_settings.EMBED_TOKEN_ISSUER,
        "aud": usergroups_settings.EMBED_TOKEN_AUDIENCE,
        "sub": str(team_id),
        "iat": issued_at,
        "exp": issued_at + expires_in,
        "jti": secrets.token_urlsafe(16),
        "user_group_id": user_group_id,
        GENERATION_CLAIM: generation,
    }
    optional = {"resource": resource, "origin": origin, "params": params}
    claims.update((name, value) for name, value in optional.items() if value is not None)
    key = keys.signing_key()
    token = jwt.encode(
        claims,
        key.private_key,
        algorithm=key.alg,
        headers={"kid": key.kid},
        json_encoder=_CompactUTF8,
    )
    if len(token) > MAX_TOKEN_BYTES:
        raise TokenTooLarge(len(token))
    return token


@sensitive_variables("token", "fingerprint")
def verify(token: object) -> Claims:
    """The claims of a token this server signed and that has not expired.

    Raises :class:`ExpiredEmbedToken` for an expired one (only once its signature
    holds), :class:`OriginRequired` for one without ``origin`` while
    ``EMBED_REQUIRE_ORIGIN`` is on, :class:`InvalidEmbedToken` for anything else. No
    database access.

    The signature is checked once per process and token (:mod:`.verified` remembers
    the digests of tokens that passed, under the keys in force); the claims, ``exp``
    against the clock among them, are checked on every call.
    """
    if not isinstance(token, str) or len(token) > MAX_TOKEN_BYTES or not _SHAPE.fullmatch(token):
        raise InvalidEmbedToken("malformed")
    ring = keys.keyring()
    fingerprint = verified.digest(token)
    try:
        if not verified.signatures.holds(fingerprint, ring):
            claims = _checked(_decoded(ring, token))
            verified.signatures.remember(fingerprint, ring)
            return claims
        return _checked(_json_segment(token.split(".")[1]))
    except ExpiredEmbedToken:
        verified.signatures.forget(fingerprint)
        raise
    except (ValueError, TypeError, RecursionError):  # base64, UTF-8, JSON, too deep
        raise InvalidEmbedToken("invalid") from None


@sensitive_variables("segment")
def _json_segment(segment: str) -> Any:
    """The JSON value of a base64url segment (the shape regex checked its alphabet)."""
    return json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))


@sensitive_variables("token")
def _decoded(ring: list[keys.SigningKey], token: str) -> Any:
    """The claims of ``token`` as ``jwt.decode`` verifies them: the header names a key in
    force by ``kid``, with that key's one algorithm (``"none"``, HS256 with the public
    key as its secret and every other substitution is refused before any signature is
    read), the signature holds, the registered claims are valid."""
    try:
        kid = jwt.get_unverified_header(token).get("kid")
        key = next((key for key in ring if key.kid == kid), None)
        if key is None:
            raise InvalidEmbedToken("unknown key")
        return jwt.decode(
            token,
            key.public_key,
            algorithms=[key.alg],
            audience=usergroups_settings.EMBED_TOKEN_AUDIENCE,
            issuer=usergroups_settings.EMBED_TOKEN_ISSUER,
            options={"require": _REQUIRED, "verify_signature": True},
        )
    except jwt.ExpiredSignatureError:
        raise ExpiredEmbedToken("expired") from None
    except (jwt.InvalidTokenError, AttributeError):
        raise InvalidEmbedToken("invalid") from None


def _checked(raw: Any) -> Claims:
    """The claims of a token whose signature holds, checked as ``jwt.decode`` would with
    our options (required claims, ``iat``/``nbf`` not in the future, ``exp`` in the
    future, our ``iss`` and ``aud``), stricter where we only ever sign one form
    (integer times, a string ``aud``), then typed."""
    if not isinstance(raw, dict) or any(raw.get(name) is None for name in _REQUIRED):
        raise InvalidEmbedToken("claims")
    now = timezone.now().timestamp()
    iat, exp, nbf = raw["iat"], raw["exp"], raw.get("nbf", 0)
    if type(iat) is not int or type(exp) is not int or type(nbf) is not int:
        raise InvalidEmbedToken("times")
    if iat > now or nbf > now:
        raise InvalidEmbedToken("not yet valid")
    if exp <= now:
        raise ExpiredEmbedToken("expired")
    if (
        raw["iss"] != usergroups_settings.EMBED_TOKEN_ISSUER
        or raw["aud"] != usergroups_settings.EMBED_TOKEN_AUDIENCE
        or not isinstance(raw["jti"], str)
    ):
        raise InvalidEmbedToken("iss, aud or jti")
    claims = _typed(raw)
    if claims.origin is None and usergroups_settings.EMBED_REQUIRE_ORIGIN:
        raise OriginRequired("no origin")
    return claims


def _typed(raw: dict[str, Any]) -> Claims:
    """The claims typed; :class:`InvalidEmbedToken` if one is not what we sign."""
    sub, generation, exp = raw["sub"], raw[GENERATION_CLAIM], raw["exp"]
    resource, origin = raw.get("resource"), raw.get("origin")
    params = raw.get("params", {})
    well_typed = (
        isinstance(sub, str)
        and sub.isascii()
        and sub.isdigit()
        and type(generation) is int
        and type(exp) is int
        and isinstance(raw["user_group_id"], str)
        and isinstance(resource, str | None)
        and isinstance(origin, str | None)
        and isinstance(params, dict)
    )
    if not well_typed:
        raise InvalidEmbedToken("claims")
    return Claims(
        team_id=int(sub),
        user_group_id=raw["user_group_id"],
        generation=generation,
        expires_at=datetime.fromtimestamp(exp, UTC),
        resource=resource,
        origin=origin,
        params=params,
        raw=raw,
    )

"""Signing and verifying embed tokens: JWTs in compact JWS form.

PyJWT signs and verifies (``jwt.encode`` and ``jwt.decode``: no JOSE of our own).
Verification checks everything a token says about itself (shape, size, ``kid``,
``alg`` against the key's one algorithm, signature, ``exp``, ``iat``, ``aud``, ``iss``,
the claims' types) before anything is read from the database: a forged, expired or
malformed token costs no query. Whether what the token is bound to still holds (its
workspace, group, key, end user, their generations, the denylist) is the caller's one
query (:mod:`usergroups.services.verification`, which also remembers answers).
"""

import json
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jwt
from django.views.decorators.debug import sensitive_variables

from usergroups.conf import usergroups_settings
from usergroups.embed import keys
from usergroups.frozen import freeze

#: The largest embed token, in bytes (CONTRACT section 6).
MAX_TOKEN_BYTES = 4096
#: The private claim holding the group's embed generation (see UserGroup.embed_generation).
GENERATION_CLAIM = "gen"
#: What else a token is bound to, each checked at verification (CONTRACT 6a, 7 and 8a):
#: its workspace's id and generation, its group's binding, the ``public_id`` of the API
#: key that minted it (absent when host code minted it in-process, without a key), and,
#: for a person, their binding and generation. None is a secret or any part of one.
WORKSPACE_CLAIM = "wid"
WORKSPACE_GENERATION_CLAIM = "wgen"
BINDING_CLAIM = "bnd"
KEY_CLAIM = "key"
END_USER_CLAIM = "end_user_id"
END_USER_BINDING_CLAIM = "ubnd"
END_USER_GENERATION_CLAIM = "ugen"
#: True when the token's minter may set what the group's lineage or the person sets (a
#: key with ``write``, or host code): its ``params`` win over them at every use. Absent or
#: false, the lineage's and the person's current values win (CONTRACT 9a, 8a).
PARAMS_WIN_CLAIM = "pwin"
#: Clock difference allowed on ``iat`` and ``exp`` (PyJWT's ``leeway``): none, so a
#: token is good for exactly its ``expires_in``.
LEEWAY_SECONDS = 0
_REQUIRED = [
    "iss",
    "aud",
    "sub",
    "iat",
    "exp",
    "jti",
    "user_group_id",
    GENERATION_CLAIM,
    WORKSPACE_CLAIM,
    WORKSPACE_GENERATION_CLAIM,
    BINDING_CLAIM,
]
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
class EndUserBinding:
    """The person a token is minted for, as the token names them."""

    end_user_id: str
    binding: str
    generation: int


@dataclass(frozen=True)
class Binding:
    """What a token is bound to besides its group's id (see :data:`WORKSPACE_CLAIM`)."""

    workspace_id: int
    workspace_generation: int
    group_binding: str
    group_generation: int
    key_id: str | None = None
    end_user: EndUserBinding | None = None


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
    jti: str
    binding: Binding
    #: See :data:`PARAMS_WIN_CLAIM`.
    params_win: bool = False

    @property
    def end_user_id(self) -> str | None:
        return None if self.binding.end_user is None else self.binding.end_user.end_user_id


class _CompactUTF8(json.JSONEncoder):
    """Non-ASCII text as UTF-8, not ``\\uXXXX``: up to 6 times shorter in the token."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["ensure_ascii"] = False
        super().__init__(**kwargs)


def timestamp_text(seconds: int) -> str:
    """``exp`` as the API writes times: ISO 8601 in UTC, to the second."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_jti() -> str:
    """A token's id: random, public (it names the token, it does not open anything)."""
    return secrets.token_urlsafe(16)


@sensitive_variables("token")
def sign(
    *,
    team_id: int,
    user_group_id: str,
    binding: Binding,
    issued_at: int,
    expires_in: int,
    resource: str | None = None,
    origin: str | None = None,
    params: Mapping[str, Any] | None = None,
    jti: str | None = None,
    params_win: bool = True,
) -> str:
    """A new token with the current signing key; :class:`TokenTooLarge` past the limit.
    ``jti`` (default: a new :func:`new_jti`) names it, e.g. in its audit event;
    ``params_win``: whether the minter may set what the lineage and the person set."""
    claims: dict[str, Any] = {
        "iss": usergroups_settings.EMBED_TOKEN_ISSUER,
        "aud": usergroups_settings.EMBED_TOKEN_AUDIENCE,
        "sub": str(team_id),
        "iat": issued_at,
        "exp": issued_at + expires_in,
        "jti": jti or new_jti(),
        "user_group_id": user_group_id,
        GENERATION_CLAIM: binding.group_generation,
        WORKSPACE_CLAIM: binding.workspace_id,
        WORKSPACE_GENERATION_CLAIM: binding.workspace_generation,
        BINDING_CLAIM: binding.group_binding,
    }
    if binding.key_id is not None:
        claims[KEY_CLAIM] = binding.key_id
    if params and params_win:
        claims[PARAMS_WIN_CLAIM] = True
    if binding.end_user is not None:
        claims[END_USER_CLAIM] = binding.end_user.end_user_id
        claims[END_USER_BINDING_CLAIM] = binding.end_user.binding
        claims[END_USER_GENERATION_CLAIM] = binding.end_user.generation
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


@sensitive_variables("token")
def verify(token: object) -> Claims:
    """The claims of a token this server signed and that has not expired.

    Raises :class:`ExpiredEmbedToken` for an expired one (only once its signature
    holds), :class:`OriginRequired` for one without ``origin`` while
    ``EMBED_REQUIRE_ORIGIN`` is on, :class:`InvalidEmbedToken` for anything else. No
    database access.

    One ``jwt.decode`` checks it all: the header names a key in force by ``kid``, with
    that key's one algorithm (``"none"``, HS256 with the public key as its secret and
    every other substitution is refused before any signature is read), the signature
    holds, then the required claims, ``iat``, ``exp``, ``iss`` and ``aud``.
    """
    if not isinstance(token, str) or len(token) > MAX_TOKEN_BYTES or not _SHAPE.fullmatch(token):
        raise InvalidEmbedToken("malformed")
    try:
        kid = jwt.get_unverified_header(token).get("kid")
        key = next((key for key in keys.keyring() if key.kid == kid), None)
        if key is None:
            raise InvalidEmbedToken("unknown key")
        raw = jwt.decode(
            token,
            key.public_key,
            algorithms=[key.alg],
            audience=usergroups_settings.EMBED_TOKEN_AUDIENCE,
            issuer=usergroups_settings.EMBED_TOKEN_ISSUER,
            leeway=LEEWAY_SECONDS,
            # We only ever sign a string ``aud``.
            options={"require": _REQUIRED, "strict_aud": True},
        )
    except jwt.ExpiredSignatureError:
        raise ExpiredEmbedToken("expired") from None
    except (jwt.InvalidTokenError, RecursionError):  # RecursionError: a deep header
        raise InvalidEmbedToken("invalid") from None
    claims = _typed(raw)
    if claims.origin is None and usergroups_settings.EMBED_REQUIRE_ORIGIN:
        raise OriginRequired("no origin")
    return claims


def _typed(raw: dict[str, Any]) -> Claims:
    """The claims typed; :class:`InvalidEmbedToken` if one is not what we sign (stricter
    than ``jwt.decode``, which takes ``1.5`` as a time, on PyJWT < 2.10 any ``sub``)."""
    sub, generation, exp = raw["sub"], raw[GENERATION_CLAIM], raw["exp"]
    resource, origin = raw.get("resource"), raw.get("origin")
    raw = freeze(raw)  # read-only all the way down: a grant may be shared by requests
    params = raw.get("params", freeze({}))
    well_typed = (
        isinstance(sub, str)
        and sub.isascii()
        and sub.isdigit()
        and type(generation) is int
        and type(exp) is int
        and type(raw["iat"]) is int
        and type(raw.get("nbf", 0)) is int
        and isinstance(raw["jti"], str)
        and isinstance(raw["user_group_id"], str)
        and isinstance(resource, str | None)
        and isinstance(origin, str | None)
        and isinstance(params, dict)
        and type(raw.get(PARAMS_WIN_CLAIM, False)) is bool
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
        jti=raw["jti"],
        binding=_binding(raw),
        params_win=raw.get(PARAMS_WIN_CLAIM, False),
    )


def _binding(raw: dict[str, Any]) -> Binding:
    """The token's :class:`Binding`; :class:`InvalidEmbedToken` if a claim is mistyped."""
    person = None
    if END_USER_CLAIM in raw:
        end_user_id = raw[END_USER_CLAIM]
        person_binding, person_generation = (
            raw.get(END_USER_BINDING_CLAIM),
            raw.get(END_USER_GENERATION_CLAIM),
        )
        if not (
            isinstance(end_user_id, str)
            and isinstance(person_binding, str)
            and type(person_generation) is int
        ):
            raise InvalidEmbedToken("claims")
        person = EndUserBinding(end_user_id, person_binding, person_generation)
    workspace, workspace_generation = raw[WORKSPACE_CLAIM], raw[WORKSPACE_GENERATION_CLAIM]
    group_binding, key_id = raw[BINDING_CLAIM], raw.get(KEY_CLAIM)
    if not (
        type(workspace) is int
        and type(workspace_generation) is int
        and isinstance(group_binding, str)
        and isinstance(key_id, str | None)
    ):
        raise InvalidEmbedToken("claims")
    return Binding(
        workspace_id=workspace,
        workspace_generation=workspace_generation,
        group_binding=group_binding,
        group_generation=raw[GENERATION_CLAIM],
        key_id=key_id,
        end_user=person,
    )

"""OpenAPI description of ``/api/user/embed-token`` and its JWK Set, for drf-spectacular
(registered from :mod:`usergroups.apps` with :mod:`usergroups.api.openapi`, whose shared
schemas it uses). Written by hand, like the rest: they are the contract."""

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiViewExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework.views import APIView

from usergroups.api.embed_serializers import MAX_PARAMS_BYTES, MIN_EXPIRES_IN
from usergroups.api.embed_views import (
    EmbedTokenIntrospectView,
    EmbedTokenRevokeView,
    EmbedTokenView,
    JWKSView,
)
from usergroups.api.openapi import ERROR, TEXT, Schema, UserGroupAutoSchema, _errors, _success
from usergroups.embed.origins import MAX_ORIGIN_LENGTH
from usergroups.embed.tokens import MAX_TOKEN_BYTES

EMBED_GROUP: Schema = {
    "type": "object",
    "required": ["team_id", "name", "provided_id"],
    "properties": {
        "team_id": {"type": "integer"},
        "name": {"type": "string"},
        "provided_id": {"type": "string"},
    },
}
USER_GROUP_ID: Schema = {**TEXT, "description": "The group's `user_group_id` in this workspace."}
MINT_REQUEST: Schema = {
    "type": "object",
    "required": ["user_group_id"],
    "properties": {
        "user_group_id": USER_GROUP_ID,
        "resource": {**TEXT, "description": "What is embedded (e.g. a dashboard id)."},
        "origin": {
            "type": "string",
            "maxLength": MAX_ORIGIN_LENGTH,
            "pattern": r"^[Hh][Tt][Tt][Pp][Ss]?://[^/?#@\s]+$",
            "description": "The web origin `http(s)://host[:port]` the token is locked to, "
            "nothing after it; kept lowercased, without the scheme's default port.",
        },
        "expires_in": {
            "type": "integer",
            "minimum": MIN_EXPIRES_IN,
            "description": "Seconds, up to EMBED_TOKEN_MAX_SECONDS (default 86400); "
            "default EMBED_TOKEN_SECONDS (900).",
        },
        "params": {
            "type": "object",
            "additionalProperties": True,
            "description": f"Locked variables, laid over the group's computed properties; "
            f"at most {MAX_PARAMS_BYTES} bytes as JSON.",
        },
    },
}
NOT_FOUND = OpenApiResponse(
    ERROR, description="`not_found`: no group of this workspace has this id."
)
EMBED_OPERATIONS: dict[str, Schema] = {
    "mint": {
        "operation_id": "mint_embed_token",
        "summary": "Mint an embed token",
        "description": f"A short-lived JWT (compact JWS, EdDSA or ES256, at most "
        f"{MAX_TOKEN_BYTES} bytes) for the browser, instead of the group token. Claims: "
        "`iss`, `aud`, `sub` (the team_id), `iat`, `exp`, `jti`, `user_group_id`, `gen`, "
        "and `resource`, `origin`, `params` when given. Writes nothing.",
        "request": MINT_REQUEST,
        "responses": {
            200: _success(
                embed_token={"type": "string", "maxLength": MAX_TOKEN_BYTES},
                expires_in={"type": "integer"},
                expires_at={"type": "string", "format": "date-time"},
                user_group=EMBED_GROUP,
            ),
            404: NOT_FOUND,
        },
    },
    "introspect": {
        "operation_id": "introspect_embed_token",
        "summary": "Introspect an embed token",
        "description": "Whether the token is active for this workspace, and what it grants. "
        "An expired, forged, malformed, revoked or another workspace's token, or one whose "
        'group is deleted, is `{"success": 1, "active": false}` and nothing more.',
        "request": {
            "type": "object",
            "required": ["embed_token"],
            "properties": {"embed_token": {"type": "string"}},
        },
        "responses": {
            200: {
                **_success(active={"type": "boolean"}),
                "properties": {
                    **_success(active={"type": "boolean"})["properties"],
                    "user_group": EMBED_GROUP,
                    "resource": {"type": "string", "nullable": True},
                    "origin": {"type": "string", "nullable": True},
                    "expires_at": {"type": "string", "format": "date-time"},
                    "variables": {
                        "type": "object",
                        "additionalProperties": True,
                        "description": "The group's computed properties with `params` "
                        "laid over them (a top-level key of `params` wins).",
                    },
                },
            },
        },
    },
    "revoke": {
        "operation_id": "revoke_embed_tokens",
        "summary": "Revoke a group's embed tokens",
        "description": "Every embed token minted so far for the group stops working at "
        "once, on every process; the group token stays. Tokens minted afterwards work.",
        "request": {
            "type": "object",
            "required": ["user_group_id"],
            "properties": {"user_group_id": USER_GROUP_ID},
        },
        "responses": {200: _success(user_group=EMBED_GROUP), 404: NOT_FOUND},
    },
}
for described in EMBED_OPERATIONS.values():
    described["scopes"] = ["embed"]
    described["scope_note"] = "Scope: `embed`, checked before the body is read."
    described["parameters"] = []
    described["responses"].update(_errors(400, 401, 403, 411, 413, 415, 429, 503))
JWKS_OPERATION: Schema = {
    "operation_id": "embed_token_jwks",
    "summary": "The JWK Set of embed tokens",
    "description": "The public keys (RFC 7517) that verify current embed tokens: the "
    "signing key, then those of the fallback secrets. Any JOSE library, or a service "
    "such as Cube, verifies tokens with it without calling back. Cacheable for 5 minutes.",
    "scopes": [],
    "scope_note": "No API key needed.",
    "request": None,
    "parameters": [],
    "responses": {
        200: {
            "type": "object",
            "required": ["keys"],
            "properties": {
                "keys": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["kty", "crv", "x", "kid", "alg", "use"],
                        "additionalProperties": {"type": "string"},
                    },
                }
            },
        },
        **_errors(405),
    },
}


def _documented(view: type[APIView], operation: Schema) -> type[OpenApiViewExtension]:
    class Schema_(UserGroupAutoSchema):
        def _operation(self) -> Schema:
            return operation

    class Extension(OpenApiViewExtension):
        target_class = f"{view.__module__}.{view.__qualname__}"

        def view_replacement(self) -> type[APIView]:
            return type(f"Documented{view.__name__}", (view,), {"schema": Schema_()})

    return Extension


MintViewSchema = _documented(EmbedTokenView, EMBED_OPERATIONS["mint"])
IntrospectViewSchema = _documented(EmbedTokenIntrospectView, EMBED_OPERATIONS["introspect"])
RevokeViewSchema = _documented(EmbedTokenRevokeView, EMBED_OPERATIONS["revoke"])
JWKSViewSchema = _documented(JWKSView, JWKS_OPERATION)


class EmbedTokenAuthenticationScheme(OpenApiAuthenticationExtension):
    """For a host's own views that take embed tokens, in its own schema."""

    target_class = "usergroups.auth.embed.EmbedTokenAuthentication"
    name = "EmbedAuth"

    def get_security_definition(self, auto_schema: AutoSchema) -> Any:
        return {
            "type": "http",
            "scheme": "Embed",
            "description": "`Embed <embed token>`: 401 `token_expired` (fetch a new one) or "
            "`authentication_failed`, 403 `origin_not_allowed` or `permission_denied` "
            "(another resource).",
        }

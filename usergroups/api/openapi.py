"""OpenAPI 3 description of the app's API for drf-spectacular, generated from its serializers.

Loaded by the app only when drf-spectacular is installed (the ``openapi`` extra), so the
app itself does not depend on it; it imports no view (targets are dotted names). Every
shared shape is one component: the error envelope, the group shapes, the request bodies
and the answers, referenced by ``$ref``. The rules the validators enforce are stated
here as JSON Schema, so that a client or a fuzzer knows what the API accepts:

* the field extensions say what the app's custom serializer fields take;
* :data:`OPERATIONS` gives each operation its request, answers, scopes and links;
* :class:`UserGroupAutoSchema` adds what drf-spectacular does not describe by itself:
  a body on GET and DELETE, "exactly one of" rules (``oneOf``), ``x-scopes``, links.

Under OpenAPI 3.1 (``SPECTACULAR_SETTINGS["OAS_VERSION"]``) the schema also names the
rules 3.0 cannot state: the keys of mappings and properties (``propertyNames``) and
constants (``const``).
"""

from typing import Any

from drf_spectacular.extensions import (
    OpenApiAuthenticationExtension,
    OpenApiSerializerFieldExtension,
    OpenApiViewExtension,
)
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ComponentRegistry, ResolvedComponent
from drf_spectacular.settings import spectacular_settings
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.views import APIView

from usergroups.api import audit_serializers as audit
from usergroups.api import embed_serializers as embed
from usergroups.api import end_user_serializers as people
from usergroups.api import serializers as api
from usergroups.api import webhook_serializers as webhook
from usergroups.conf import usergroups_settings
from usergroups.embed.origins import MAX_ORIGIN_LENGTH
from usergroups.embed.tokens import MAX_TOKEN_BYTES
from usergroups.validators import MAX_ID_LENGTH

Schema = dict[str, Any]

#: Text the database stores as given: no NUL (check_text; lone surrogates cannot be
#: written in UTF-8 JSON text that a client sends).
NO_NUL = "^[^\\u0000]*$"
GROUP_TOKEN_PATTERN = "^ugt_[A-Za-z0-9_-]{43}$"


def is_json_schema() -> bool:
    """Whether the schema is OpenAPI 3.1 or later, whose schemas are JSON Schema
    (``const``, ``propertyNames``); a 3.0 one states those rules in words."""
    version = str(getattr(spectacular_settings, "OAS_VERSION", "3.0.3"))
    return not version.startswith("3.0")


def text_schema(max_length: int = MAX_ID_LENGTH) -> Schema:
    """What :func:`usergroups.validators.check_text` accepts (not empty)."""
    return {"type": "string", "minLength": 1, "maxLength": max_length, "pattern": NO_NUL}


def constant(value: int | bool) -> Schema:
    kind = "boolean" if isinstance(value, bool) else "integer"
    if is_json_schema():
        return {"type": kind, "const": value}
    return {"type": kind, "enum": [value]}


def with_keys(schema: Schema, keys: Schema) -> Schema:
    """``schema``, an object, whose keys follow ``keys`` where the OpenAPI version can say so."""
    if is_json_schema():
        return {**schema, "propertyNames": keys}
    return schema


# Field extensions: the app's custom serializer fields -------------------------------------


class FieldSchema(OpenApiSerializerFieldExtension):
    """A field of the app whose schema :meth:`schema` gives, optionally as a component."""

    component: str | None = None

    def schema(self, auto_schema: AutoSchema) -> Schema:
        raise NotImplementedError

    def map_serializer_field(self, auto_schema: AutoSchema, direction: str) -> Schema:
        if self.component is None:
            return self.schema(auto_schema)
        component = ResolvedComponent(
            name=self.component,
            type=ResolvedComponent.SCHEMA,
            object=self.component,
            schema=self.schema(auto_schema),
        )
        auto_schema.registry.register_on_missing(component)
        return component.ref


class StrictCharSchema(FieldSchema):
    target_class = "usergroups.api.serializers.StrictCharField"

    def schema(self, auto_schema: AutoSchema) -> Schema:
        text = text_schema(self.target.max_length or MAX_ID_LENGTH)
        if self.target.allow_blank:  # said here: drf-spectacular before 0.28 would not
            return {"oneOf": [text, {"type": "string", "maxLength": 0}]}
        return text


class MappingSchema(FieldSchema):
    target_class = "usergroups.api.serializers.MappingField"
    component = "Mapping"

    def schema(self, auto_schema: AutoSchema) -> Schema:
        text = text_schema()
        return with_keys(
            {
                "type": "object",
                "description": "Schema id to data source id, each a non-empty string of at "
                f"most {MAX_ID_LENGTH} characters without NUL; an integer data source id is "
                "taken as its decimal string.",
                "maxProperties": usergroups_settings.MAX_MAPPING_ENTRIES,
                "additionalProperties": {"oneOf": [text, {"type": "integer"}]},
            },
            text,
        )


#: How deep arrays in arrays are described item by item; deeper, any value.
ARRAY_LEVELS = 6


def json_object(component: str, description: str) -> Schema:
    """A JSON object no string of which (key or value, at any depth) holds a NUL, as
    :func:`usergroups.validators.validate_properties` has it. Under OpenAPI 3.1 a nested
    object is the component itself; an array is described ARRAY_LEVELS deep, items of
    deeper ones are any value (client generators cannot follow a recursive array), which
    the description covers."""
    if not is_json_schema():
        return {"type": "object", "description": description, "additionalProperties": True}
    no_nul = {"type": "string", "pattern": NO_NUL}
    nested = {"$ref": f"#/components/schemas/{component}"}
    value: Schema = {}
    for _level in range(ARRAY_LEVELS + 1):
        array = {"type": "array", "items": value}
        value = {
            "oneOf": [
                no_nul,
                {"type": "number"},
                {"type": "boolean"},
                {"type": "null"},
                nested,
                array,
            ]
        }
    return {
        "type": "object",
        "description": description,
        "propertyNames": no_nul,
        "additionalProperties": value,
    }


class PropertiesSchema(FieldSchema):
    target_class = "usergroups.api.serializers.PropertiesField"
    component = "Properties"

    def schema(self, auto_schema: AutoSchema) -> Schema:
        return json_object(
            self.component,
            "Free-form properties: a JSON object of at most "
            f"{usergroups_settings.MAX_PROPERTIES_BYTES} bytes as compact JSON, nested at "
            f"most {usergroups_settings.MAX_PROPERTIES_DEPTH} deep; no string in it holds a NUL.",
        )


class ParamsSchema(FieldSchema):
    target_class = "usergroups.api.embed_serializers.ParamsField"
    component = "Params"

    def schema(self, auto_schema: AutoSchema) -> Schema:
        return json_object(
            self.component,
            "Locked variables, laid over the group's computed properties (a top-level key "
            f"of `params` wins); at most {embed.MAX_PARAMS_BYTES} bytes as compact JSON, "
            f"nested at most {usergroups_settings.MAX_PROPERTIES_DEPTH} deep.",
        )


_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
# A port from 1 to 65535 in at most 5 digits, leading zeros allowed (normalize_origin).
_PORT = "|".join(
    [
        "[1-9]",
        "0[1-9]|[1-9][0-9]",
        "00[1-9]|0[1-9][0-9]|[1-9][0-9]{2}",
        "000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3}",
        "0000[1-9]|000[1-9][0-9]|00[1-9][0-9]{2}|0[1-9][0-9]{3}|[1-5][0-9]{4}",
        "6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]",
    ]
)
ORIGIN_PATTERN = (
    f"^[Hh][Tt][Tt][Pp][Ss]?://(?:{_LABEL}(?:\\.{_LABEL})*|\\[[0-9A-Fa-f:.]+\\])(?::(?:{_PORT}))?$"
)


class OriginSchema(FieldSchema):
    target_class = "usergroups.api.embed_serializers.OriginField"

    def schema(self, auto_schema: AutoSchema) -> Schema:
        return {
            "type": "string",
            "maxLength": MAX_ORIGIN_LENGTH,
            "pattern": ORIGIN_PATTERN,
            "description": "The web origin `http(s)://host[:port]` the token is locked to, "
            "nothing after it; kept lowercased, without the scheme's default port. A token "
            "minted without one is valid from any origin.",
        }


class ExpiresInSchema(FieldSchema):
    target_class = "usergroups.api.embed_serializers.ExpiresInField"

    def schema(self, auto_schema: AutoSchema) -> Schema:
        return {
            "type": "integer",
            "minimum": embed.MIN_EXPIRES_IN,
            "maximum": usergroups_settings.EMBED_TOKEN_MAX_SECONDS,
            "description": "Seconds the token lives, up to EMBED_TOKEN_MAX_SECONDS; default "
            f"EMBED_TOKEN_SECONDS ({usergroups_settings.EMBED_TOKEN_SECONDS}).",
        }


class EmbedTokenSchema(FieldSchema):
    target_class = "usergroups.api.embed_serializers.EmbedTokenField"

    def schema(self, auto_schema: AutoSchema) -> Schema:
        return {
            "type": "string",
            "pattern": NO_NUL,
            "description": "Any string: a malformed or expired one is just inactive.",
        }


class TrueSchema(FieldSchema):
    target_class = "usergroups.api.embed_serializers.TrueField"

    def schema(self, auto_schema: AutoSchema) -> Schema:
        return {**constant(True), "description": "Only `true`: the whole workspace."}


class ActionPrefixSchema(FieldSchema):
    target_class = "usergroups.api.audit_serializers.ActionPrefixField"

    def schema(self, auto_schema: AutoSchema) -> Schema:
        return {
            "type": "string",
            "maxLength": audit.MAX_ACTION_LENGTH,
            "pattern": f"^{audit.ACTION_PREFIX_PATTERN}$",
            "description": "A dotted prefix of actions: `user_group`, `user_group.created`.",
        }


class EventPrefixSchema(FieldSchema):
    target_class = "usergroups.api.webhook_serializers.EventPrefixField"

    def schema(self, auto_schema: AutoSchema) -> Schema:
        return {
            "type": "string",
            "enum": webhook.event_prefixes(),
            "description": "An action (`embed_token.minted`) or a family of them (`user_group`).",
        }


class CursorSchema(FieldSchema):
    target_class = "usergroups.api.audit_serializers.CursorField"

    def schema(self, auto_schema: AutoSchema) -> Schema:
        return {
            "type": "string",
            "minLength": 1,
            "maxLength": audit.MAX_CURSOR_LENGTH,
            "pattern": audit.CURSOR_PATTERN,
            "description": "The `next_cursor` of an earlier answer (opaque).",
        }


class WebhookURLSchema(FieldSchema):
    target_class = "usergroups.api.webhook_serializers.WebhookURLField"

    def schema(self, auto_schema: AutoSchema) -> Schema:
        private = usergroups_settings.WEBHOOK_ALLOW_PRIVATE
        return {
            "type": "string",
            "minLength": 1,
            "maxLength": webhook.addresses.MAX_URL_LENGTH,
            "pattern": "^[Hh][Tt][Tt][Pp]" + ("[Ss]?" if private else "[Ss]") + "://[^\\s#@]+$",
            "description": "Where events are POSTed: `https` to a public address, unless "
            "the server sets WEBHOOK_ALLOW_PRIVATE (then also `http` and private or "
            "loopback addresses). No credentials, no fragment. A host name is resolved now "
            "and at every delivery, and refused if any of its addresses is not allowed.",
        }


class GroupTokenSchema(FieldSchema):
    target_class = "usergroups.api.serializers.TokenField"

    def schema(self, auto_schema: AutoSchema) -> Schema:
        return {
            "type": "string",
            "pattern": GROUP_TOKEN_PATTERN,
            "description": "The group's current token: the long-lived secret of the caller's "
            "backend, never for a browser.",
        }


class Constant(serializers.Field):
    """A schema-only field: always ``value``; under OpenAPI 3.0, where it is an enum of
    one, the component ``name``."""

    def __init__(self, value: int, name: str, **kwargs: Any) -> None:
        self.value, self.name = value, name
        super().__init__(**kwargs)


class ConstantSchema(OpenApiSerializerFieldExtension):
    target_class = Constant

    def get_name(self) -> str | None:
        # A named enum is not hoisted into a component of drf-spectacular's naming.
        return None if is_json_schema() else self.target.name

    def map_serializer_field(self, auto_schema: AutoSchema, direction: str) -> Schema:
        return constant(self.target.value)


# The error envelope, defined once -----------------------------------------------------------

ERROR_CODES = [
    "parse_error", "invalid", "not_authenticated", "authentication_failed", "permission_denied",
    "not_found", "method_not_allowed", "conflict", "length_required", "request_too_large",
    "unsupported_media_type", "throttled", "service_unavailable", "token_unavailable",
    "end_user_disabled",
]  # fmt: skip


class ErrorCodeField(serializers.CharField):
    """Schema-only: the ``code`` of a failure."""


class ErrorCodeSchema(OpenApiSerializerFieldExtension):
    target_class = ErrorCodeField

    def get_name(self) -> str:
        return "ErrorCode"

    def map_serializer_field(self, auto_schema: AutoSchema, direction: str) -> Schema:
        return {"type": "string", "enum": ERROR_CODES}


#: What went wrong: a code to act on, a message to show, and for ``invalid`` each bad field
#: with its messages. (Made by inline_serializer: a field named ``fields`` would shadow the
#: attribute of a declared serializer class.)
ERROR_DETAIL = inline_serializer(
    "ErrorDetail",
    {
        "code": ErrorCodeField(),
        "message": serializers.CharField(),
        "fields": serializers.DictField(
            child=serializers.ListField(child=serializers.CharField()),
            required=False,
            help_text="Only for `invalid`: each bad field with its messages.",
        ),
    },
)


class ErrorSerializer(serializers.Serializer):
    """Every failure of the API, with the HTTP status that names its kind."""

    success = Constant(0, "Failed")
    error = ERROR_DETAIL


def answer(name: str, **fields: serializers.Field) -> serializers.Serializer:
    """A success answer: ``{"success": 1, ...}`` around the app's own shapes."""
    return inline_serializer(name, {"success": Constant(1, "Succeeded"), **fields})


ERROR_DESCRIPTIONS = {
    400: "`parse_error` (not JSON, not an object, nested too deep) or `invalid` (a bad "
    "field, or a query parameter that is not percent-encoded UTF-8): `fields` names each.",
    401: "`not_authenticated` (no header; `WWW-Authenticate: Token`) or "
    "`authentication_failed` (bad, revoked or expired key).",
    403: "`permission_denied`: the API key lacks the scope this operation needs "
    "(`x-scopes`); the message names it, and nothing changes.",
    404: "`not_found`: the token or id is not a current one of this workspace.",
    405: "`method_not_allowed`.",
    409: '`conflict`: the group has child groups; send `"cascade": true` to delete them with it.',
    411: "`length_required`: a chunked body this server cannot read; send Content-Length.",
    413: "`request_too_large`: the body is over MAX_BODY_BYTES.",
    415: "`unsupported_media_type`: a body that is not JSON.",
    429: "`throttled`: over the per-key rate; see Retry-After.",
    503: "`service_unavailable`: the database failed mid-request (connection lost, lock "
    "timeout); try again after Retry-After seconds. Where a token is shown, also "
    "`token_unavailable`: it was sealed with a secret this server no longer has.",
}
#: What every operation that reads a body with an API key may answer.
KEYED = (400, 401, 403, 411, 413, 415, 429, 503)


def errors(*statuses: int, **described: str) -> dict[int, OpenApiResponse]:
    """The error answers, each the one ``Error`` component; ``described`` overrides the
    description of a status (``s404="..."``)."""
    return {
        status: OpenApiResponse(
            ErrorSerializer, description=described.get(f"s{status}", ERROR_DESCRIPTIONS[status])
        )
        for status in statuses
    }


# Operations ---------------------------------------------------------------------------------

QUERY_FALLBACK = (
    "Read only when the body is empty (for clients that cannot send a body with GET), "
    "then under the rules of the body's field of the same name."
)
# Any string: a query parameter beside a body is not read, so no value of it is refused.
GET_OR_CREATE_QUERY = [
    OpenApiParameter("user_group_id", str, description=QUERY_FALLBACK),
    OpenApiParameter("name", str, description=QUERY_FALLBACK),
    OpenApiParameter("mapping", str, description="`mapping` as JSON text. " + QUERY_FALLBACK),
    OpenApiParameter("properties", str, description="`properties` as JSON text. " + QUERY_FALLBACK),
    OpenApiParameter("parent_user_group_id", str, description=QUERY_FALLBACK),
]
PARENT_RULE = (
    " `parent_user_group_id` names a group of the same workspace: unknown, a cycle, or a "
    "change that makes any group deeper than MAX_HIERARCHY_DEPTH is 400 `invalid`."
)
#: What every key of the JWK Set has (``y`` is for ES256 keys only).
JWK_MEMBERS = {"kty", "crv", "x", "kid", "alg", "use"}
EMBED_GROUP_404 = "`not_found`: no group of this workspace has this id."

USER_GROUP_ANSWER = answer("UserGroupAnswer", user_group=api.UserGroupSerializer())
END_USER_ANSWER = answer("EndUserAnswer", end_user=people.EndUserSerializer())
END_USER_404 = "`not_found`: no end user of this workspace has this id."
REVOCATION_AXES = (
    "Exactly one axis: `user_group_id` (with `subtree: true`, its descendants too), "
    "`end_user_id` (the person's tokens in every group), `embed_token` (that one token; one "
    "that is not a live token of this workspace is 400 `invalid` naming it) or "
    "`all: true` (every token of the workspace). None or more than one: 400 `invalid`."
)
WEBHOOK_ANSWER = answer("WebhookAnswer", webhook=webhook.WebhookSerializer())

#: Per view (dotted name) and method: what :func:`extend_schema` says of the operation, and
#: the ``x-scopes`` it needs.
OPERATIONS: dict[str, dict[str, Schema]] = {
    "usergroups.api.views.UserGroupView": {
        "GET": {
            "operation_id": "get_or_create_user_group",
            "answer": "The group, found or made; `new_user_group` says which.",
            "summary": "Get or create a user group",
            "description": "Returns the group of `user_group_id`, creating it if unknown. A "
            "known group is returned as stored, with the same token."
            + PARENT_RULE
            + " Scope: `read` to get an existing group, `write` to create one. The scope is "
            "checked after the body is validated; a key without `write` creates nothing "
            "(403 naming `write`).",
            "scopes": ["read", "write"],
            "request": api.GetOrCreateRequestSerializer,
            "parameters": GET_OR_CREATE_QUERY,
            "responses": {
                200: answer(
                    "GetOrCreateAnswer",
                    new_user_group=serializers.BooleanField(),
                    user_group=api.UserGroupSerializer(),
                ),
                **errors(*KEYED),
            },
        },
        "POST": {
            "operation_id": "rotate_user_group_token",
            "answer": "The group with its new token.",
            "summary": "Rotate a user group token",
            "description": "Replaces the token; the old one stops working at once, and so "
            "does every embed token minted for the group. Scope: `rotate`, checked before "
            "the body is read.",
            "scopes": ["rotate"],
            "request": api.RotateRequestSerializer,
            "responses": {
                200: answer("RotateAnswer", user_group=api.RotatedGroupSerializer()),
                **errors(*KEYED, 404),
            },
        },
        "PUT": {
            "operation_id": "update_user_group",
            "answer": "The group as changed.",
            "summary": "Update a user group (extension)",
            "description": "Changes the group named by `user_group_id`: given fields replace "
            "stored ones (`properties: null` clears them, `parent_user_group_id: null` "
            "detaches it); `new_user_group_id` renames it (another group's id: 400). The "
            "token does not change." + PARENT_RULE + " Scope: `write`, checked before the "
            "body is read.",
            "scopes": ["write"],
            "request": api.UpdateRequestSerializer,
            "responses": {200: USER_GROUP_ANSWER, **errors(*KEYED, 404)},
        },
        "DELETE": {
            "operation_id": "delete_user_group",
            "answer": "The group deleted.",
            "summary": "Delete a user group (extension)",
            "description": "Deletes the group named by `user_group_id` or holding "
            "`current_token` (exactly one of them); its token and embed tokens stop working "
            "at once. With `cascade`, its descendants go too, in one transaction, and the "
            "answer adds `deleted_count` (the group included). Scope: `write`, checked "
            "before the body is read.",
            "scopes": ["write"],
            "request": api.DeleteRequestSerializer,
            "responses": {
                200: answer(
                    "DeleteAnswer",
                    user_group=api.NamedGroupSerializer(),
                    deleted_count=serializers.IntegerField(
                        min_value=1,
                        required=False,
                        help_text="Only with `cascade`: the groups deleted.",
                    ),
                ),
                **errors(*KEYED, 404, 409),
            },
        },
    },
    "usergroups.api.views.UserGroupListView": {
        "GET": {
            "operation_id": "list_user_groups",
            "answer": "A page of the workspace's groups.",
            "summary": "List user groups (extension)",
            "description": "The workspace's groups, oldest first, without tokens; with "
            "`parent_user_group_id`, that group's direct children. Scope: `read`, checked "
            "before the query is read.",
            "scopes": ["read"],
            "request": None,
            "parameters": [api.ListQuerySerializer],
            "responses": {
                200: answer(
                    "ListAnswer",
                    total_count=serializers.IntegerField(min_value=0),
                    page=serializers.IntegerField(min_value=1),
                    page_size=serializers.IntegerField(min_value=1),
                    user_groups=api.ListedGroupSerializer(many=True),
                ),
                **errors(400, 401, 403, 429, 503),
            },
        },
    },
    "usergroups.api.embed_views.EmbedTokenView": {
        "POST": {
            "operation_id": "mint_embed_token",
            "answer": "The new embed token.",
            "summary": "Mint an embed token",
            "description": "A short-lived JWT (compact JWS, EdDSA or ES256, at most "
            f"{MAX_TOKEN_BYTES} bytes) for the browser, instead of the group token. Claims: "
            "`iss`, `aud`, `sub` (the team_id), `iat`, `exp`, `jti`, `user_group_id`, what "
            "the token is bound to (`gen`, `wid`, `wgen`, `bnd`, `key`: the minting key's "
            "prefix), and `resource`, `origin`, `params`, `end_user_id` (with `ubnd`, `ugen`) "
            "when given; one that would be larger is 400 `invalid` naming them. A token "
            "without `origin` is valid from any origin. `end_user` names the person: "
            "created if missing, given fields that differ saved (nothing written when none "
            "does); a disabled one is 403 `end_user_disabled`. `exclusive: true` (needs "
            "`end_user`) revokes the person's earlier tokens in every group. A key without "
            "`write` grants no more than the lineage and the writers with `write` allowed: "
            "its `end_user.attributes` must be the person's stored ones (403 "
            "`permission_denied`, nothing written) and its `params` may not set a top-level "
            "key that the group's lineage or the person's attributes set (400 `invalid` "
            "naming `params`). "
            "Writes its audit event (`embed_token.minted`, naming the token by its `jti`). "
            "Scope: `embed`, checked before the body is read.",
            "scopes": ["embed"],
            "request": embed.MintRequestSerializer,
            "responses": {
                200: answer(
                    "MintAnswer",
                    embed_token=serializers.CharField(max_length=MAX_TOKEN_BYTES),
                    expires_in=serializers.IntegerField(min_value=embed.MIN_EXPIRES_IN),
                    expires_at=serializers.DateTimeField(),
                    user_group=api.NamedGroupSerializer(),
                ),
                **errors(
                    *KEYED,
                    404,
                    s404=EMBED_GROUP_404,
                    s403=ERROR_DESCRIPTIONS[403]
                    + " `end_user_disabled`: the end user is disabled; no token."
                    + " Also `permission_denied`: a key without `write` sent"
                    + " `end_user.attributes` that differ from the person's; nothing written.",
                ),
            },
        },
    },
    "usergroups.api.embed_views.EmbedTokenIntrospectView": {
        "POST": {
            "operation_id": "introspect_embed_token",
            "answer": "Whether the token is active, and what it grants if it is.",
            "summary": "Introspect an embed token",
            "description": "Whether the token is active for this workspace, and what it "
            "grants. An expired, forged, malformed, revoked or another workspace's token, or "
            'one whose group is deleted, is `{"success": 1, "active": false}` and nothing '
            "more. Scope: `embed`, checked before the body is read.",
            "scopes": ["embed"],
            "request": embed.EmbedTokenRequestSerializer,
            "responses": {
                200: answer(
                    "IntrospectAnswer",
                    active=serializers.BooleanField(),
                    user_group=api.NamedGroupSerializer(required=False),
                    resource=serializers.CharField(required=False, allow_null=True),
                    origin=serializers.CharField(required=False, allow_null=True),
                    expires_at=serializers.DateTimeField(required=False),
                    end_user_id=serializers.CharField(
                        required=False,
                        allow_null=True,
                        help_text="The person the token was minted for, or null.",
                    ),
                    # JSONField, not DictField: a generated client would get a class
                    # for each (tests/test_openapi_client.py keeps the count small).
                    variables=serializers.JSONField(
                        required=False,
                        help_text="The group's computed properties, then the end user's "
                        "`attributes` over them, then `params` over both (a top-level key "
                        "of a later layer replaces).",
                    ),
                    variable_sources=serializers.JSONField(
                        required=False,
                        help_text="For each top-level key of `variables`, where it came "
                        'from: `"user_group:<provided_id>"` (the group or ancestor that set '
                        'it), `"end_user"` or `"params"`.',
                    ),
                ),
                **errors(*KEYED),
            },
        },
    },
    "usergroups.api.embed_views.EmbedTokenRevokeView": {
        "POST": {
            "operation_id": "revoke_embed_tokens",
            "answer": "The axis revoked (and the group, on the group axis).",
            "summary": "Revoke embed tokens",
            "description": "Every embed token on the axis minted so far stops working at "
            "once, on every process; the group token stays. Tokens minted afterwards work. "
            + REVOCATION_AXES
            + " Scope: `embed`, checked before the body is read.",
            "scopes": ["embed"],
            "request": embed.RevokeRequestSerializer,
            "responses": {
                200: answer(
                    "RevokeAnswer",
                    revoked=serializers.CharField(
                        help_text="The axis: `user_group`, `end_user`, `embed_token` or `all`."
                    ),
                    user_group=api.NamedGroupSerializer(
                        required=False, help_text="On the group axis only."
                    ),
                ),
                **errors(
                    *KEYED,
                    404,
                    s404="`not_found`: no group (or end user) of this workspace has this id.",
                ),
            },
        },
    },
    "usergroups.api.end_user_views.EndUserView": {
        "PUT": {
            "operation_id": "put_end_user",
            "answer": "The end user, made or changed; `created` says which.",
            "summary": "Create or change an end user",
            "description": "Creates the end user `end_user_id` of this workspace, or sets the "
            "given fields that differ (nothing is written when none does). Disabling "
            "refuses the person's embed tokens. Scope: `write`, checked before the body "
            "is read.",
            "scopes": ["write"],
            "request": people.PutEndUserSerializer,
            "responses": {
                200: answer(
                    "PutEndUserAnswer",
                    created=serializers.BooleanField(),
                    end_user=people.EndUserSerializer(),
                ),
                **errors(*KEYED),
            },
        },
        "GET": {
            "operation_id": "get_end_user",
            "answer": "The end user.",
            "summary": "Get an end user",
            "description": "The end user `end_user_id` (in the body, or the query string "
            "for clients that cannot send a body with GET). Scope: `read`, checked before "
            "the body is read.",
            "scopes": ["read"],
            "request": people.EndUserIdSerializer,
            "parameters": [OpenApiParameter("end_user_id", str, description=QUERY_FALLBACK)],
            "responses": {
                200: END_USER_ANSWER,
                **errors(*KEYED, 404, s404=END_USER_404),
            },
        },
        "DELETE": {
            "operation_id": "delete_end_user",
            "answer": "The end user deleted.",
            "summary": "Delete an end user",
            "description": "Deletes the end user; their embed tokens stop working at once, "
            "and stay dead if the same id is created again. Scope: `write`, checked before "
            "the body is read.",
            "scopes": ["write"],
            "request": people.EndUserIdSerializer,
            "responses": {
                200: answer("DeleteEndUserAnswer", end_user=people.EndUserIdSerializer()),
                **errors(*KEYED, 404, s404=END_USER_404),
            },
        },
    },
    "usergroups.api.end_user_views.EndUserListView": {
        "GET": {
            "operation_id": "list_end_users",
            "answer": "A page of the workspace's end users.",
            "summary": "List end users",
            "description": "The workspace's end users by `end_user_id` (code point order); "
            "`end_user_id_prefix` keeps those whose id starts with it. Scope: `read`, "
            "checked before the query is read.",
            "scopes": ["read"],
            "request": None,
            "parameters": [people.EndUserListQuerySerializer],
            "responses": {
                200: answer(
                    "EndUserListAnswer",
                    total_count=serializers.IntegerField(min_value=0),
                    page=serializers.IntegerField(min_value=1),
                    limit=serializers.IntegerField(min_value=1),
                    end_users=people.EndUserSerializer(many=True),
                ),
                **errors(400, 401, 403, 429, 503),
            },
        },
    },
    "usergroups.api.audit_views.AuditEventListView": {
        "GET": {
            "operation_id": "list_audit_events",
            "answer": "A page of the workspace's audit events, newest first.",
            "summary": "List audit events",
            "description": "The workspace's audit trail, newest first: every change, embed "
            "token mint and revocation, with who made it (`actor`), the request's "
            "`X-Request-ID` and what changed (`details`). Filters combine: `action` is a "
            "dotted prefix (`user_group` or `user_group.created`), `since` is inclusive and "
            "`until` exclusive (ISO 8601). Pages follow `next_cursor` (null on the last; send "
            "the same filters with it); events written meanwhile never appear on later "
            "pages, and none is skipped or repeated. Pages are in the order of insertion, "
            "or of `at` when a time window is given. Scope: `read`, checked before the "
            "query is read.",
            "scopes": ["read"],
            "request": None,
            "parameters": [audit.AuditQuerySerializer],
            "responses": {
                200: answer(
                    "AuditAnswer",
                    events=audit.AuditEventSerializer(many=True),
                    next_cursor=serializers.CharField(
                        allow_null=True,
                        help_text="Pass as `cursor` for the next page; null on the last.",
                    ),
                ),
                **errors(400, 401, 403, 429, 503),
            },
        },
    },
    "usergroups.api.webhook_views.WebhookView": {
        "POST": {
            "operation_id": "create_webhook",
            "answer": "The webhook, with its signing secret: shown this once.",
            "summary": "Register a webhook",
            "description": "Every audit event of the workspace whose action one of `events` "
            'names is POSTed to `url` as `{"type": action, "timestamp": at, "data": '
            "event}`, signed as Standard Webhooks specifies (`webhook-id`, the same on "
            "every retry; `webhook-timestamp`; `webhook-signature`), at least once. The "
            "signing secret (`whsec_...`) is in this answer only. Writes a `webhook.created` "
            "event. Scope: `write`, checked before the body is read.",
            "scopes": ["write"],
            "request": webhook.CreateWebhookSerializer,
            "responses": {
                200: answer("CreateWebhookAnswer", webhook=webhook.NewWebhookSerializer()),
                **errors(*KEYED),
            },
        },
        "DELETE": {
            "operation_id": "delete_webhook",
            "answer": "The webhook deleted.",
            "summary": "Delete a webhook",
            "description": "Deletes the webhook and its pending deliveries; writes a "
            "`webhook.deleted` event. Scope: `write`, checked before the body is read.",
            "scopes": ["write"],
            "request": webhook.WebhookIdSerializer,
            "responses": {
                200: WEBHOOK_ANSWER,
                **errors(
                    *KEYED, 404, s404="`not_found`: no webhook of this workspace has this id."
                ),
            },
        },
    },
    "usergroups.api.webhook_views.WebhookListView": {
        "GET": {
            "operation_id": "list_webhooks",
            "answer": "The workspace's webhooks, oldest first.",
            "summary": "List webhooks",
            "description": "The workspace's webhooks, never with their secrets; `disabled` "
            "is true for one turned off after WEBHOOK_DISABLE_AFTER_FAILURES failed "
            "deliveries in a row. Scope: `read`.",
            "scopes": ["read"],
            "request": None,
            "responses": {
                200: answer("WebhookListAnswer", webhooks=webhook.WebhookSerializer(many=True)),
                **errors(401, 403, 429, 503),
            },
        },
    },
    "usergroups.api.embed_views.JWKSView": {
        "GET": {
            "operation_id": "embed_token_jwks",
            "answer": "The JWK Set.",
            "summary": "The JWK Set of embed tokens",
            "description": "The public keys (RFC 7517) that verify current embed tokens: the "
            "signing key, then those of the fallback secrets. Any JOSE library, or a service "
            "such as Cube, verifies tokens with it without calling back. Cacheable for 5 "
            "minutes. No API key needed.",
            "scopes": [],
            "request": None,
            "responses": {
                200: inline_serializer(
                    "JWKSet",
                    {
                        "keys": serializers.ListField(
                            child=inline_serializer(
                                "JWK",
                                {
                                    name: serializers.CharField(required=name in JWK_MEMBERS)
                                    for name in ("kty", "crv", "x", "y", "kid", "alg", "use")
                                },
                            )
                        )
                    },
                ),
                **errors(405),
            },
        },
    },
}

#: Request bodies that take exactly one of these fields.
EXACTLY_ONE_OF: dict[type[serializers.Serializer], tuple[str, ...]] = {
    api.DeleteRequestSerializer: ("user_group_id", "current_token"),
    embed.RevokeRequestSerializer: tuple(embed.REVOCATION_AXES),
}

#: What a request component says, where the serializer's docstring is a note for developers.
REQUEST_DESCRIPTIONS: dict[type[serializers.Serializer], str] = {
    api.RotateRequestSerializer: "The token to replace.",
    embed.EmbedTokenRequestSerializer: "The embed token to judge.",
    api.DeleteRequestSerializer: "The group to delete, named by exactly one of "
    "`user_group_id` and `current_token`.",
    embed.RevokeRequestSerializer: "What to revoke. " + REVOCATION_AXES,
}

_GROUP_ID = "$response.body#/user_group/provided_id"
#: OpenAPI links from an operation's 200 answer to the operations that take what it
#: returns (the group's token or id), by operationId.
LINKS: dict[str, Schema] = {
    "get_or_create_user_group": {
        "RotateToken": {
            "operationId": "rotate_user_group_token",
            "requestBody": {"current_token": "$response.body#/user_group/token"},
            "description": "Rotate the token of the group returned.",
        },
        "Update": {
            "operationId": "update_user_group",
            "requestBody": {"user_group_id": _GROUP_ID},
            "description": "Update the group returned.",
        },
        "Delete": {
            "operationId": "delete_user_group",
            "requestBody": {"user_group_id": _GROUP_ID},
            "description": "Delete the group returned (by id; the body takes one of id and token).",
            # The body is exactly this: a generated one may name the token too.
            "x-schemathesis": {"merge_body": False},
        },
        "DeleteByToken": {
            "operationId": "delete_user_group",
            "requestBody": {"current_token": "$response.body#/user_group/token"},
            "description": "Delete the group holding the token returned.",
            "x-schemathesis": {"merge_body": False},
        },
        "MintEmbedToken": {
            "operationId": "mint_embed_token",
            "requestBody": {"user_group_id": _GROUP_ID},
            "description": "Mint an embed token for the group returned.",
        },
        "RevokeEmbedTokens": {
            "operationId": "revoke_embed_tokens",
            "requestBody": {"user_group_id": _GROUP_ID},
            "description": "Revoke the embed tokens of the group returned.",
            # Exactly one axis: a generated body may name another.
            "x-schemathesis": {"merge_body": False},
        },
        "ListChildren": {
            "operationId": "list_user_groups",
            "parameters": {"parent_user_group_id": _GROUP_ID},
            "description": "List the direct children of the group returned.",
        },
    },
}


#: Answers that show a group's stored properties: DRF's JSONField says "any JSON value"
#: (and, nullable under OpenAPI 3.1, a oneOf that null matches twice).
STORED_PROPERTIES = (api.UserGroupSerializer, api.ListedGroupSerializer)


def stored_properties(auto_schema: AutoSchema) -> Schema:
    """What the answers say of stored ``properties`` (an object or null) and of
    ``computed_properties`` (an object)."""
    properties = PropertiesSchema(api.PropertiesField()).map_serializer_field(
        auto_schema, "response"
    )
    nullable: Schema
    if is_json_schema():
        nullable = {"oneOf": [properties, {"type": "null"}]}
    else:
        nullable = {"allOf": [properties], "nullable": True}
    return {
        "properties": {**nullable, "readOnly": True},
        "computed_properties": {
            "type": "object",
            "additionalProperties": True,
            "readOnly": True,
            "description": "The ancestors' properties merged from the root down, then the "
            "group's own; a top-level key of a deeper group wins.",
        },
    }


class UserGroupAutoSchema(AutoSchema):
    """drf-spectacular's AutoSchema, with what it leaves out for this API."""

    def get_operation(
        self,
        path: str,
        path_regex: str,
        path_prefix: str,
        method: str,
        registry: ComponentRegistry,
    ) -> Schema | None:
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        request = self.get_request_serializer()
        if request is not None:
            component = self.resolve_serializer(request, "request")
            shape = request if isinstance(request, type) else type(request)
            if component.schema is not None:
                if shape in EXACTLY_ONE_OF:
                    component.schema["oneOf"] = [
                        {"required": [name]} for name in EXACTLY_ONE_OF[shape]
                    ]
                    if "requestBody" in operation:  # no field is required, the body is
                        operation["requestBody"]["required"] = True
                if shape in REQUEST_DESCRIPTIONS:
                    component.schema["description"] = REQUEST_DESCRIPTIONS[shape]
            if "requestBody" not in operation:
                # drf-spectacular describes no body for GET or DELETE; these take one by
                # design, in the shape it gives a PUT's body.
                operation["requestBody"] = {
                    "content": {"application/json": {"schema": component.ref}},
                    "required": True,
                }
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "query" and not parameter.get("required"):
                # DRF reads an empty optional query value as no value.
                parameter["allowEmptyValue"] = True
        for shape in STORED_PROPERTIES:
            stored = self.resolve_serializer(shape, "response").schema
            if stored is not None:
                shown = stored_properties(self)
                for name in shown.keys() & stored["properties"].keys():
                    stored["properties"][name] = shown[name]
        links = LINKS.get(operation["operationId"])
        if links:
            operation["responses"]["200"]["links"] = links
        return operation


def _documented(view: type[APIView], operations: dict[str, Schema]) -> type[APIView]:
    """``view`` with :data:`OPERATIONS` laid on its methods by :func:`extend_schema`, on
    top of :class:`UserGroupAutoSchema`."""
    handlers = {}
    for method, spec in operations.items():
        name = method.lower()
        original = getattr(view, name)

        def handler(self: APIView, request: Any, *args: Any, _original: Any = original) -> Any:
            return _original(self, request, *args)

        # The schema class extend_schema builds on (as DRF's @action leaves it).
        handler.kwargs = {"schema": UserGroupAutoSchema}  # type: ignore[attr-defined]
        handlers[name] = extend_schema(
            operation_id=spec["operation_id"],
            summary=spec["summary"],
            description=spec["description"],
            request=spec["request"],
            responses={
                status: answer
                if isinstance(answer, OpenApiResponse)
                else OpenApiResponse(answer, description=spec["answer"])
                for status, answer in spec["responses"].items()
            },
            parameters=spec.get("parameters", []),
            # OpenAPI 3.0 gives an apiKey security requirement no scopes: an extension
            # names the API key scopes (usergroups.scopes) the operation may need.
            extensions={"x-scopes": spec["scopes"]},
        )(handler)
    return type(f"Documented{view.__name__}", (view,), handlers)


def _view_extension(view_path: str) -> type[OpenApiViewExtension]:
    class ViewSchema(OpenApiViewExtension):
        target_class = view_path

        def view_replacement(self) -> type[APIView]:
            return _documented(self.target, OPERATIONS[view_path])

    ViewSchema.__name__ = ViewSchema.__qualname__ = f"{view_path.rsplit('.', 1)[1]}Schema"
    return ViewSchema


VIEW_EXTENSIONS = [_view_extension(view_path) for view_path in OPERATIONS]


# Authentication: for the app's views and for a host's own ------------------------------------


class HeaderAuthenticationScheme(OpenApiAuthenticationExtension):
    """``Authorization: <keyword> <credential>``; subclasses with another ``keyword`` (as
    the docs show a host adapting a class) are described with theirs."""

    match_subclasses = True
    credential = ""
    description = ""

    def get_security_definition(self, auto_schema: AutoSchema) -> Schema:
        keyword = self.target.keyword
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": f"`{keyword} <{self.credential}>`. {self.description}",
        }


class APIKeyAuthenticationScheme(HeaderAuthenticationScheme):
    target_class = "usergroups.auth.api_key.APIKeyAuthentication"
    name = "TokenAuth"
    credential = "API key"
    description = (
        "Keys start with `ugk_` (manage.py create_api_key). A key holds scopes among "
        "`read`, `write`, `rotate`, `embed`; each operation names those it needs in "
        "`x-scopes`, and answers 403 `permission_denied` without them."
    )


class GroupTokenAuthenticationScheme(HeaderAuthenticationScheme):
    """For a host's own views that take group tokens, in its own schema."""

    target_class = "usergroups.auth.group_token.GroupTokenAuthentication"
    name = "GroupTokenAuth"
    credential = "group token"
    description = (
        "Group tokens start with `ugt_`; a rotated one is refused (401 "
        "`authentication_failed`), as is any when EMBED_ACCEPT_GROUP_TOKENS is false."
    )


class EmbedTokenAuthenticationScheme(HeaderAuthenticationScheme):
    """For a host's own views that take embed tokens, in its own schema."""

    target_class = "usergroups.auth.embed.EmbedTokenAuthentication"
    name = "EmbedAuth"
    credential = "embed token"
    description = (
        "A short-lived token from mint_embed_token. 401 `token_expired` (fetch a new one) "
        "or `authentication_failed`; 403 `origin_not_allowed` or `permission_denied` "
        "(minted for another resource)."
    )

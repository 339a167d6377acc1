"""OpenAPI 3 description of the app's API for drf-spectacular, generated from its serializers.

Loaded by the app only when drf-spectacular is installed (the ``openapi`` extra); it imports
no view (targets are dotted names). The serializers carry what each field takes (their
``help_text``) and the rules across fields (:class:`~usergroups.api.serializers.
RequestSerializer`), the view methods their operation's description (their docstrings);
this module adds what drf-spectacular cannot read from them: the schemas of the app's own
fields, the error envelope, the answers built outside a serializer, each operation's id,
summary and scopes, and a body on GET and DELETE. Under OpenAPI 3.1
(``SPECTACULAR_SETTINGS["OAS_VERSION"]``) it also states what 3.0 cannot (``const``,
``propertyNames``, ``dependentRequired``, ``if``/``then``).
"""

import inspect
from collections.abc import Callable
from typing import Any

from drf_spectacular.extensions import (
    OpenApiAuthenticationExtension,
    OpenApiSerializerFieldExtension,
    OpenApiViewExtension,
)
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ComponentRegistry
from drf_spectacular.settings import spectacular_settings
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from drf_spectacular.utils import inline_serializer as shape
from rest_framework import serializers
from rest_framework.views import APIView

from usergroups.api import audit_serializers as audit
from usergroups.api import embed_serializers as embed
from usergroups.api import end_user_serializers as people
from usergroups.api import serializers as api
from usergroups.api import webhook_serializers as webhook
from usergroups.conf import usergroups_settings
from usergroups.crypto import GROUP_TOKEN_PATTERN
from usergroups.embed.origins import MAX_ORIGIN_LENGTH
from usergroups.embed.tokens import MAX_TOKEN_BYTES
from usergroups.validators import MAX_ID_LENGTH

Schema = dict[str, Any]

#: Text the database stores as given: no NUL (check_text).
NO_NUL = "^[^\\u0000]*$"


def is_json_schema() -> bool:
    """Whether the schema is OpenAPI 3.1 or later, whose schemas are JSON Schema."""
    return not str(getattr(spectacular_settings, "OAS_VERSION", "3.0.3")).startswith("3.0")


def constant(value: int | bool) -> Schema:
    kind = "boolean" if isinstance(value, bool) else "integer"
    return {"type": kind, **({"const": value} if is_json_schema() else {"enum": [value]})}


def text(max_length: int | None = MAX_ID_LENGTH) -> Schema:
    """What :func:`usergroups.validators.check_text` accepts (not empty)."""
    return {"type": "string", "minLength": 1, "maxLength": max_length, "pattern": NO_NUL}


def json_object(component: str, description: str, keys: Schema | None = None) -> Schema:
    """A JSON object whose keys follow ``keys`` and no string of which holds a NUL
    (``validate_properties``). Under 3.1 a nested object is the component itself and an
    array is described 6 levels deep (client generators cannot follow a recursive array)."""
    if not is_json_schema():
        return {"type": "object", "description": description, "additionalProperties": True}
    value: Schema = {}
    for _level in range(7):
        value = {
            "oneOf": [
                {"type": "string", "pattern": NO_NUL},
                {"type": "number"},
                {"type": "boolean"},
                {"type": "null"},
                {"$ref": f"#/components/schemas/{component}"},
                {"type": "array", "items": value},
            ]
        }
    names = keys or {"type": "string", "pattern": NO_NUL}
    return {"type": "object", "description": description, "propertyNames": names,
            "additionalProperties": value}  # fmt: skip


# A port from 1 to 65535 in at most 5 digits, leading zeros allowed (normalize_origin).
_PORT = (
    "0{0,4}[1-9]|0{0,3}[1-9][0-9]|0{0,2}[1-9][0-9]{2}|0?[1-9][0-9]{3}|[1-5][0-9]{4}"
    "|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]"
)
_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
#: What :func:`usergroups.embed.origins.normalize_origin` takes (tests/test_openapi.py
#: holds the two together).
ORIGIN_PATTERN = (
    f"^[Hh][Tt][Tt][Pp][Ss]?://(?:{_LABEL}(?:\\.{_LABEL})*|\\[[0-9A-Fa-f:.]+\\])(?::(?:{_PORT}))?$"
)


def _strict_char(field: api.StrictCharField) -> Schema:
    schema = text(field.max_length)
    # drf-spectacular before 0.28 would not say the empty string is allowed.
    return {"oneOf": [schema, {"type": "string", "maxLength": 0}]} if field.allow_blank else schema


def _mapping(field: serializers.Field) -> Schema:
    schema = json_object("Mapping", "Schema id to data source id.", keys=text())
    schema["additionalProperties"] = {"oneOf": [text(), {"type": "integer"}]}
    return {**schema, "maxProperties": usergroups_settings.MAX_MAPPING_ENTRIES}


def _limits(max_bytes: int) -> str:
    depth = usergroups_settings.MAX_PROPERTIES_DEPTH
    return (
        f"A JSON object of at most {max_bytes} bytes as compact JSON, nested at most {depth} deep."
    )


def _webhook_url(field: webhook.WebhookURLField) -> Schema:
    scheme = "[Ss]?" if usergroups_settings.WEBHOOK_ALLOW_PRIVATE else "[Ss]"
    return {**text(field.max_length), "pattern": f"^[Hh][Tt][Tt][Pp]{scheme}://[^\\s#@]+$"}


#: The schema of each of the app's own fields (and its component, if it is one).
FIELDS: dict[str, tuple[Callable[[Any], Schema], str | None]] = {
    "usergroups.api.serializers.StrictCharField": (_strict_char, None),
    "usergroups.api.serializers.MappingField": (_mapping, "Mapping"),
    "usergroups.api.serializers.PropertiesField": (
        lambda f: json_object("Properties", _limits(usergroups_settings.MAX_PROPERTIES_BYTES)),
        "Properties",
    ),
    "usergroups.api.serializers.TokenField": (
        lambda f: {"type": "string", "pattern": f"^{GROUP_TOKEN_PATTERN}$"},
        None,
    ),
    "usergroups.api.embed_serializers.ParamsField": (
        lambda f: json_object("Params", _limits(embed.MAX_PARAMS_BYTES)),
        "Params",
    ),
    "usergroups.api.embed_serializers.OriginField": (
        lambda f: {"type": "string", "maxLength": MAX_ORIGIN_LENGTH, "pattern": ORIGIN_PATTERN},
        None,
    ),
    "usergroups.api.embed_serializers.ExpiresInField": (
        lambda f: {
            "type": "integer",
            "minimum": embed.MIN_EXPIRES_IN,
            "maximum": usergroups_settings.EMBED_TOKEN_MAX_SECONDS,
        },
        None,
    ),
    "usergroups.api.embed_serializers.EmbedTokenField": (
        lambda f: {"type": "string", "pattern": NO_NUL},
        None,
    ),
    "usergroups.api.embed_serializers.TrueField": (lambda f: constant(True), None),
    "usergroups.api.audit_serializers.ActionPrefixField": (
        lambda f: {**text(f.max_length), "pattern": f"^{audit.ACTION_PREFIX_PATTERN}$"},
        None,
    ),
    "usergroups.api.audit_serializers.CursorField": (
        lambda f: {**text(audit.MAX_CURSOR_LENGTH), "pattern": audit.CURSOR_PATTERN},
        None,
    ),
    "usergroups.api.webhook_serializers.EventPrefixField": (
        lambda f: {"type": "string", "enum": webhook.event_prefixes()},
        None,
    ),
    "usergroups.api.webhook_serializers.WebhookURLField": (_webhook_url, None),
}


def _field_extension(target: str) -> type[OpenApiSerializerFieldExtension]:
    build, component = FIELDS[target]

    class FieldSchema(OpenApiSerializerFieldExtension):
        target_class = target

        def get_name(self) -> str | None:
            return component

        def map_serializer_field(self, auto_schema: AutoSchema, direction: str) -> Schema:
            return build(self.target)

    FieldSchema.__name__ = FieldSchema.__qualname__ = f"{target.rsplit('.', 1)[1]}Schema"
    return FieldSchema


FIELD_EXTENSIONS = [_field_extension(target) for target in FIELDS]


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

#: Per status: the codes it answers with, and what they mean.
ERRORS: dict[int, tuple[tuple[str, ...], str]] = {
    400: (("parse_error", "invalid"), "`parse_error` (not JSON, not an object, nested too "
          "deep) or `invalid` (a bad field, or a query parameter that is not percent-encoded "
          "UTF-8): `fields` names each."),
    401: (("not_authenticated", "authentication_failed", "token_expired"),
          "`not_authenticated` (no header; `WWW-Authenticate: Token`) or "
          "`authentication_failed` (bad, revoked or expired key)."),
    403: (("permission_denied", "end_user_disabled", "origin_not_allowed"),
          "`permission_denied`: the API key lacks the scope this operation needs "
          "(`x-scopes`); the message names it, and nothing changes."),
    404: (("not_found",), "`not_found`: the token or id is not a current one of this workspace."),
    405: (("method_not_allowed",), "`method_not_allowed`."),
    409: (("conflict",), '`conflict`: the group has child groups; send `"cascade": true`.'),
    411: (("length_required",), "`length_required`: a chunked body this server cannot read."),
    413: (("request_too_large",), "`request_too_large`: the body is over MAX_BODY_BYTES."),
    415: (("unsupported_media_type",), "`unsupported_media_type`: a body that is not JSON."),
    429: (("throttled",), "`throttled`: over the per-key rate; see Retry-After."),
    503: (("service_unavailable", "token_unavailable"), "`service_unavailable`: the database "
          "failed mid-request; try again after Retry-After. Where a token is shown, also "
          "`token_unavailable`: it was sealed with a secret this server no longer has."),
}  # fmt: skip
ERROR_CODES = [code for codes, _words in ERRORS.values() for code in codes]
#: What every operation that reads a body with an API key may answer.
KEYED = (400, 401, 403, 411, 413, 415, 429, 503)
#: What an operation that reads its query string only may answer.
QUERIED = (400, 401, 403, 429, 503)


class ErrorCodeField(serializers.CharField):
    """Schema-only: the ``code`` of a failure."""


class ErrorCodeSchema(OpenApiSerializerFieldExtension):
    target_class = ErrorCodeField

    def get_name(self) -> str:
        return "ErrorCode"

    def map_serializer_field(self, auto_schema: AutoSchema, direction: str) -> Schema:
        return {"type": "string", "enum": ERROR_CODES}


class ErrorSerializer(serializers.Serializer):
    """Every failure of the API, with the HTTP status that names its kind."""

    success = Constant(0, "Failed")
    # A field named ``fields`` would shadow the attribute of a declared serializer class.
    error = shape("ErrorDetail", {
        "code": ErrorCodeField(),
        "message": serializers.CharField(),
        "fields": serializers.DictField(child=serializers.ListField(child=serializers.CharField()),
                                        required=False, help_text="Only for `invalid`: each bad "
                                        "field with its messages."),
    })  # fmt: skip


def errors(*statuses: int, **described: str) -> dict[int, OpenApiResponse]:
    """The error answers, each the one ``Error`` component; ``s404="..."`` words one."""
    return {
        status: OpenApiResponse(ErrorSerializer, described.get(f"s{status}", ERRORS[status][1]))
        for status in statuses
    }


def answer(name: str, **fields: serializers.Field) -> serializers.Serializer:
    """A success answer: ``{"success": 1, ...}`` around the app's own shapes."""
    return shape(name, {"success": Constant(1, "Succeeded"), **fields})


def optional(field: type[serializers.Field], **kwargs: Any) -> serializers.Field:
    return field(required=False, **kwargs)


# Operations ---------------------------------------------------------------------------------

ANSWER_GROUP = answer("UserGroupAnswer", user_group=api.UserGroupSerializer())
ANSWER_END_USER = answer("EndUserAnswer", end_user=people.EndUserSerializer())
NO_END_USER = "`not_found`: no end user of this workspace has this id."
PAGE = {"total_count": serializers.IntegerField(min_value=0),
        "page": serializers.IntegerField(min_value=1)}  # fmt: skip


def operation(
    operation_id: str,
    summary: str,
    answer: serializers.Serializer | None,
    responses: dict[int, OpenApiResponse],
    *,
    request: Any = None,
    parameters: list[Any] | None = None,
    scopes: list[str] | None = None,
) -> Schema:
    return {"operation_id": operation_id, "summary": summary, "request": request,
            "parameters": parameters or [], "scopes": scopes,
            "responses": {200: OpenApiResponse(answer, "Succeeded."), **responses}}  # fmt: skip


#: Per view (dotted name) and method: what :func:`extend_schema` says of the operation,
#: beside the method's docstring (its description). ``x-scopes`` come from the view's
#: ``required_scopes`` unless given here.
OPERATIONS: dict[str, dict[str, Schema]] = {
    "usergroups.api.views.UserGroupView": {
        "GET": operation(
            "get_or_create_user_group", "Get or create a user group",
            answer("GetOrCreateAnswer", new_user_group=serializers.BooleanField(),
                   user_group=api.UserGroupSerializer()),
            errors(*KEYED), request=api.GetOrCreateRequestSerializer,
            parameters=[OpenApiParameter(name, str) for name in (
                "user_group_id", "name", "mapping", "properties", "parent_user_group_id")],
            scopes=["read", "write"],
        ),
        "POST": operation(
            "rotate_user_group_token", "Rotate a user group token",
            answer("RotateAnswer", user_group=api.RotatedGroupSerializer()),
            errors(*KEYED, 404), request=api.RotateRequestSerializer,
        ),
        "PUT": operation(
            "update_user_group", "Update a user group (extension)",
            ANSWER_GROUP, errors(*KEYED, 404), request=api.UpdateRequestSerializer,
        ),
        "DELETE": operation(
            "delete_user_group", "Delete a user group (extension)",
            answer("DeleteAnswer", user_group=api.NamedGroupSerializer(),
                   deleted_count=optional(serializers.IntegerField, min_value=1,
                                          help_text="Only with `cascade`: the groups deleted.")),
            errors(*KEYED, 404, 409), request=api.DeleteRequestSerializer,
        ),
    },
    "usergroups.api.views.UserGroupListView": {
        "GET": operation(
            "list_user_groups", "List user groups (extension)",
            answer("ListAnswer", **PAGE, page_size=serializers.IntegerField(min_value=1),
                   user_groups=api.ListedGroupSerializer(many=True)),
            errors(*QUERIED), parameters=[api.ListQuerySerializer],
        ),
    },
    "usergroups.api.embed_views.EmbedTokenView": {
        "POST": operation(
            "mint_embed_token", "Mint an embed token",
            answer("MintAnswer", embed_token=serializers.CharField(max_length=MAX_TOKEN_BYTES),
                   expires_in=serializers.IntegerField(min_value=embed.MIN_EXPIRES_IN),
                   expires_at=serializers.DateTimeField(), user_group=api.NamedGroupSerializer()),
            errors(*KEYED, 404, s404="`not_found`: no group of this workspace has this id.",
                   s403=ERRORS[403][1] + " `end_user_disabled`: the person is disabled. Also "
                   "`permission_denied`: a key without `write` sent `end_user.attributes` that "
                   "differ from the person's."),
            request=embed.MintRequestSerializer,
        ),
    },
    "usergroups.api.embed_views.EmbedTokenIntrospectView": {
        "POST": operation(
            "introspect_embed_token", "Introspect an embed token",
            answer(
                "IntrospectAnswer", active=serializers.BooleanField(),
                user_group=api.NamedGroupSerializer(required=False),
                resource=optional(serializers.CharField, allow_null=True),
                origin=optional(serializers.CharField, allow_null=True),
                expires_at=optional(serializers.DateTimeField),
                end_user_id=optional(serializers.CharField, allow_null=True),
                # JSONField, not DictField: a generated client would get a class for each.
                variables=optional(serializers.JSONField, help_text="The group's computed "
                                   "properties, the end user's attributes, then `params`."),
                variable_sources=optional(serializers.JSONField, help_text="Per key of "
                                          '`variables`: `"user_group:<provided_id>"`, '
                                          '`"end_user"` or `"params"`.'),
            ),
            errors(*KEYED), request=embed.EmbedTokenRequestSerializer,
        ),
    },
    "usergroups.api.embed_views.EmbedTokenRevokeView": {
        "POST": operation(
            "revoke_embed_tokens", "Revoke embed tokens",
            answer("RevokeAnswer", revoked=serializers.ChoiceField(
                       choices=list(embed.REVOCATION_AXES.values())),
                   user_group=optional(api.NamedGroupSerializer, help_text="Group axis only.")),
            errors(*KEYED, 404, s404="`not_found`: no such group (or end user) here."),
            request=embed.RevokeRequestSerializer,
        ),
    },
    "usergroups.api.end_user_views.EndUserView": {
        "PUT": operation(
            "put_end_user", "Create or change an end user",
            answer("PutEndUserAnswer", created=serializers.BooleanField(),
                   end_user=people.EndUserSerializer()),
            errors(*KEYED), request=people.PutEndUserSerializer,
        ),
        "GET": operation(
            "get_end_user", "Get an end user",
            ANSWER_END_USER, errors(*KEYED, 404, s404=NO_END_USER),
            request=people.EndUserIdSerializer, parameters=[OpenApiParameter("end_user_id", str)],
        ),
        "DELETE": operation(
            "delete_end_user", "Delete an end user",
            answer("DeleteEndUserAnswer", end_user=people.EndUserIdSerializer()),
            errors(*KEYED, 404, s404=NO_END_USER), request=people.EndUserIdSerializer,
        ),
    },
    "usergroups.api.end_user_views.EndUserListView": {
        "GET": operation(
            "list_end_users", "List end users",
            answer("EndUserListAnswer", **PAGE, limit=serializers.IntegerField(min_value=1),
                   end_users=people.EndUserSerializer(many=True)),
            errors(*QUERIED), parameters=[people.EndUserListQuerySerializer],
        ),
    },
    "usergroups.api.audit_views.AuditEventListView": {
        "GET": operation(
            "list_audit_events", "List audit events",
            answer("AuditAnswer", events=audit.AuditEventSerializer(many=True),
                   next_cursor=serializers.CharField(allow_null=True, help_text="null on "
                                                     "the last page.")),
            errors(*QUERIED), parameters=[audit.AuditQuerySerializer],
        ),
    },
    "usergroups.api.webhook_views.WebhookView": {
        "POST": operation(
            "create_webhook", "Register a webhook",
            answer("CreateWebhookAnswer", webhook=webhook.NewWebhookSerializer()),
            errors(*KEYED), request=webhook.CreateWebhookSerializer,
        ),
        "DELETE": operation(
            "delete_webhook", "Delete a webhook",
            answer("WebhookAnswer", webhook=webhook.WebhookSerializer()),
            errors(*KEYED, 404, s404="`not_found`: no webhook of this workspace has this id."),
            request=webhook.WebhookIdSerializer,
        ),
    },
    "usergroups.api.webhook_views.WebhookListView": {
        "GET": operation(
            "list_webhooks", "List webhooks",
            answer("WebhookListAnswer", webhooks=webhook.WebhookSerializer(many=True)),
            errors(*QUERIED),
        ),
    },
    "usergroups.api.embed_views.JWKSView": {
        "GET": operation(
            "embed_token_jwks", "The JWK Set of embed tokens",
            shape("JWKSet", {"keys": serializers.ListField(child=shape("JWK", {
                name: serializers.CharField(required=name != "y")
                for name in ("kty", "crv", "x", "y", "kid", "alg", "use")}))}),
            errors(405), scopes=[],
        ),
    },
}  # fmt: skip

_GROUP_ID = "$response.body#/user_group/provided_id"
_TOKEN = "$response.body#/user_group/token"
# A link's body is exactly this (merge_body): a generated one may name another axis.
_ALONE = {"x-schemathesis": {"merge_body": False}}
#: OpenAPI links from get-or-create's answer to the operations that take its token or id.
LINKS: dict[str, Schema] = {
    "get_or_create_user_group": {
        "RotateToken": {"operationId": "rotate_user_group_token",
                        "requestBody": {"current_token": _TOKEN}},
        "Update": {"operationId": "update_user_group", "requestBody": {"user_group_id": _GROUP_ID}},
        "Delete": {"operationId": "delete_user_group", "requestBody": {"user_group_id": _GROUP_ID},
                   **_ALONE},
        "DeleteByToken": {"operationId": "delete_user_group",
                          "requestBody": {"current_token": _TOKEN}, **_ALONE},
        "MintEmbedToken": {"operationId": "mint_embed_token",
                           "requestBody": {"user_group_id": _GROUP_ID}},
        "RevokeEmbedTokens": {"operationId": "revoke_embed_tokens",
                              "requestBody": {"user_group_id": _GROUP_ID}, **_ALONE},
        "ListChildren": {"operationId": "list_user_groups",
                         "parameters": {"parent_user_group_id": _GROUP_ID}},
    },
}  # fmt: skip


def cross_field_rules(shape: type[api.RequestSerializer]) -> Schema:
    """What :meth:`RequestSerializer.validate` enforces, as JSON Schema. Under ``allOf``:
    a client generator then still makes the body a class (a ``oneOf`` beside the
    properties would make it ``Any``)."""
    rules: list[Schema] = []
    if shape.exactly_one_of:
        rules.append({"oneOf": [{"required": [name]} for name in shape.exactly_one_of]})
    if is_json_schema():  # 3.0 has neither keyword
        rules += [
            {"if": {"properties": {name: {"const": True}}, "required": [name]},
             "then": {"required": [other]}}
            for name, other in shape.true_needs.items()
        ]  # fmt: skip
        if shape.only_with:
            rules.append({"dependentRequired": {n: [o] for n, o in shape.only_with.items()}})
    return {"allOf": rules} if rules else {}


class UserGroupAutoSchema(AutoSchema):
    """drf-spectacular's AutoSchema, with what it leaves out: a body on GET and DELETE,
    the rules across fields, links, and the refusals of the app's authentication classes
    (a host may make it its ``DEFAULT_SCHEMA_CLASS`` for the last)."""

    def get_operation(
        self, path: str, path_regex: str, path_prefix: str, method: str, registry: ComponentRegistry
    ) -> Schema | None:
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        if hasattr(self.view, "usergroups_operations"):  # the app's own, not a host's
            self.complete(operation, method)
        refusals: dict[str, list[str]] = {}
        for authenticator in self.view.get_authenticators():
            scheme = OpenApiAuthenticationExtension.get_match(authenticator)
            for status, described in getattr(scheme, "refusals", {}).items():
                refusals.setdefault(str(status), []).append(described)
        for status, described_all in refusals.items():
            operation["responses"].setdefault(status, self._error(" Or ".join(described_all)))
        links = LINKS.get(operation["operationId"])
        if links:
            operation["responses"]["200"]["links"] = links
        return operation

    def complete(self, operation: Schema, method: str) -> None:
        """The body of GET and DELETE, the rules across fields, empty query values."""
        request = self.get_request_serializer()
        if request is not None:
            component = self.resolve_serializer(request, "request")
            shape = request if isinstance(request, type) else type(request)
            if component.schema is not None and issubclass(shape, api.RequestSerializer):
                component.schema.update(cross_field_rules(shape))
                if shape.exactly_one_of and "requestBody" in operation:
                    operation["requestBody"]["required"] = True  # no field is, the body is
            if "requestBody" not in operation:
                # drf-spectacular describes no body for GET or DELETE; these take one, in
                # the shape it gives a PUT's. GET's query string may stand in for it.
                operation["requestBody"] = {
                    "content": {"application/json": {"schema": component.ref}},
                    "required": not (method == "GET" and operation.get("parameters")),
                }
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "query" and not parameter.get("required"):
                parameter["allowEmptyValue"] = True  # DRF reads an empty value as none

    def _error(self, description: str) -> Schema:
        error = self.resolve_serializer(ErrorSerializer, "response")
        return {"content": {"application/json": {"schema": error.ref}}, "description": description}


def _documented(view: type[APIView], operations: dict[str, Schema]) -> type[APIView]:
    """``view`` with :data:`OPERATIONS` laid on its methods by :func:`extend_schema`."""
    handlers = {}
    for method, spec in operations.items():
        original = getattr(view, method.lower())

        def handler(self: APIView, request: Any, *args: Any, _original: Any = original) -> Any:
            return _original(self, request, *args)

        # The schema class extend_schema builds on (as DRF's @action leaves it).
        handler.kwargs = {"schema": UserGroupAutoSchema}  # type: ignore[attr-defined]
        scopes = spec["scopes"]
        if scopes is None:
            scopes = [view.required_scopes[method]]  # type: ignore[attr-defined]
        named = " or ".join(f"`{scope}`" for scope in scopes)
        handlers[method.lower()] = extend_schema(
            operation_id=spec["operation_id"],
            summary=spec["summary"],
            description=(inspect.getdoc(original) or "") + (f" Scope: {named}." if named else ""),
            request=spec["request"],
            responses=spec["responses"],
            parameters=spec["parameters"],
            # OpenAPI 3.0 gives an apiKey security requirement no scopes: an extension
            # names the API key scopes (usergroups.scopes) the operation may need.
            extensions={"x-scopes": scopes},
        )(handler)
    return type(
        f"Documented{view.__name__}", (view,), {**handlers, "usergroups_operations": operations}
    )


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
    the docs show a host adapting a class) are described with theirs. ``refusals``: the
    answers the class adds to an operation (under :class:`UserGroupAutoSchema`)."""

    match_subclasses = True
    credential = ""
    description = ""
    refusals: dict[int, str] = {}

    def get_security_definition(self, auto_schema: AutoSchema) -> Schema:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": f"`{self.target.keyword} <{self.credential}>`. {self.description}",
        }


class APIKeyAuthenticationScheme(HeaderAuthenticationScheme):
    target_class = "usergroups.auth.api_key.APIKeyAuthentication"
    name = "TokenAuth"
    credential = "API key"
    description = (
        "Keys start with `ugk_` (manage.py create_api_key). A key holds scopes among `read`, "
        "`write`, `rotate`, `embed`; each operation names those it needs in `x-scopes`, and "
        "answers 403 `permission_denied` without them."
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
    refusals = {401: "`authentication_failed`: not a current group token."}


class EmbedTokenAuthenticationScheme(HeaderAuthenticationScheme):
    """For a host's own views that take embed tokens, in its own schema."""

    target_class = "usergroups.auth.embed.EmbedTokenAuthentication"
    name = "EmbedAuth"
    credential = "embed token"
    description = "A short-lived token from mint_embed_token."
    refusals = {
        401: "`token_expired` (fetch a new token and repeat once) or `authentication_failed` "
        '(forged, malformed or revoked); `WWW-Authenticate: Embed error="<code>"`.',
        403: "`origin_not_allowed` (the token is locked to another origin) or "
        "`permission_denied` (minted for another `resource`).",
    }

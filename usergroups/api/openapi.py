"""The OpenAPI 3 description of the app's API, for drf-spectacular (the ``openapi`` extra).

The views declare each method's :class:`~usergroups.api.views.Operation` (its docstring is
the description), the serializers their fields, ``help_text`` and rules across fields.
This module adds what drf-spectacular cannot read: the schemas of the app's own fields, the
error envelope, a body on GET and DELETE, links and the authentication classes' refusals;
under OpenAPI 3.1 also ``const``, ``propertyNames``, ``dependentRequired``, ``if``/``then``.
Loaded by the app only when drf-spectacular is installed; it imports no view.
"""

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from drf_spectacular.extensions import (
    OpenApiAuthenticationExtension,
    OpenApiSerializerFieldExtension,
    OpenApiViewExtension,
)
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.settings import spectacular_settings
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, inline_serializer
from rest_framework import exceptions, serializers
from rest_framework.views import APIView

import usergroups.auth.embed  # noqa: F401  (its refusals' codes are among the error codes)
from usergroups.api import audit_serializers as audit
from usergroups.api import embed_serializers as embed
from usergroups.api import serializers as api
from usergroups.api import webhook_serializers as webhook
from usergroups.conf import usergroups_settings
from usergroups.crypto import GROUP_TOKEN_PATTERN
from usergroups.embed.origins import MAX_ORIGIN_LENGTH, ORIGIN_PATTERN
from usergroups.validators import MAX_ID_LENGTH

if TYPE_CHECKING:
    from usergroups.api.views import Operation, WorkspaceAPIView

Schema = dict[str, Any]
NO_NUL = "^[^\\u0000]*$"  # text the database stores as given (check_text)


def is_json_schema() -> bool:
    """Whether the schema is OpenAPI 3.1 or later, whose schemas are JSON Schema."""
    return not spectacular_settings.OAS_VERSION.startswith("3.0")


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
        value = {"oneOf": [
            {"type": "string", "pattern": NO_NUL}, {"type": "number"}, {"type": "boolean"},
            {"type": "null"}, {"$ref": f"#/components/schemas/{component}"},
            {"type": "array", "items": value},
        ]}  # fmt: skip
    names = keys or {"type": "string", "pattern": NO_NUL}
    return {"type": "object", "description": description, "propertyNames": names,
            "additionalProperties": value}  # fmt: skip


def limited_object(component: str, max_bytes: int) -> Schema:
    depth = usergroups_settings.MAX_PROPERTIES_DEPTH
    return json_object(component, f"A JSON object of at most {max_bytes} bytes as compact "
                       f"JSON, nested at most {depth} deep.")  # fmt: skip


def _mapping(field: api.MappingField) -> Schema:
    schema = json_object("Mapping", "Schema id to data source id.", keys=text())
    schema["additionalProperties"] = {"oneOf": [text(), {"type": "integer"}]}
    return {**schema, "maxProperties": usergroups_settings.MAX_MAPPING_ENTRIES}


def _strict_char(field: api.StrictCharField) -> Schema:
    # drf-spectacular before 0.28 would not say the empty string is allowed.
    schema = text(field.max_length)
    return {"oneOf": [schema, {"type": "string", "maxLength": 0}]} if field.allow_blank else schema


def _webhook_url(field: webhook.WebhookURLField) -> Schema:
    scheme = "[Ss]?" if usergroups_settings.WEBHOOK_ALLOW_PRIVATE else "[Ss]"
    return {**text(field.max_length), "pattern": f"^[Hh][Tt][Tt][Pp]{scheme}://[^\\s#@]+$"}


class ErrorCodeField(serializers.CharField):
    """Schema-only: the ``code`` of a failure."""


def error_codes() -> list[str]:
    """The ``code`` of every failure: the ``default_code`` of each exception of DRF's and
    the app's (but DRF's 406: the API answers JSON whatever ``Accept`` says)."""
    codes, classes = set(), exceptions.APIException.__subclasses__()
    while classes:
        cls = classes.pop()
        classes += cls.__subclasses__()
        ours = cls.__module__ == exceptions.__name__ or cls.__module__.startswith("usergroups.")
        if ours and "default_code" in vars(cls) and cls is not exceptions.NotAcceptable:
            codes.add(str(cls.default_code))
    return sorted(codes)


#: The schema of each of the app's own fields, and its component's name if it is one.
FIELDS: dict[type[serializers.Field], tuple[Callable[[Any], Schema], Any]] = {
    api.StrictCharField: (_strict_char, None),
    api.MappingField: (_mapping, "Mapping"),
    api.PropertiesField: (
        lambda f: limited_object("Properties", usergroups_settings.MAX_PROPERTIES_BYTES),
        "Properties"),
    api.TokenField: (lambda f: {"type": "string", "pattern": f"^{GROUP_TOKEN_PATTERN}$"}, None),
    # Under 3.0, an enum of one: a component of its own (not one of drf-spectacular's naming).
    api.SuccessField: (lambda f: constant(f.value),
                       lambda f: None if is_json_schema() else "Succeeded" if f.value else "Failed"),
    embed.ParamsField: (lambda f: limited_object("Params", embed.MAX_PARAMS_BYTES), "Params"),
    embed.OriginField: (
        lambda f: {"type": "string", "maxLength": MAX_ORIGIN_LENGTH, "pattern": ORIGIN_PATTERN},
        None),
    embed.ExpiresInField: (lambda f: {"type": "integer", "minimum": embed.MIN_EXPIRES_IN,
                                      "maximum": usergroups_settings.EMBED_TOKEN_MAX_SECONDS}, None),
    embed.EmbedTokenField: (lambda f: {"type": "string", "pattern": NO_NUL}, None),
    embed.TrueField: (lambda f: constant(True), None),
    audit.ActionPrefixField: (
        lambda f: {**text(f.max_length), "pattern": f"^{audit.ACTION_PREFIX_PATTERN}$"}, None),
    audit.CursorField: (
        lambda f: {**text(audit.MAX_CURSOR_LENGTH), "pattern": audit.CURSOR_PATTERN}, None),
    webhook.EventPrefixField: (lambda f: {"type": "string", "enum": webhook.event_prefixes()}, None),
    webhook.WebhookURLField: (_webhook_url, None),
    ErrorCodeField: (lambda f: {"type": "string", "enum": error_codes()}, "ErrorCode"),
}  # fmt: skip


def _field_extension(target: type[serializers.Field]) -> type[OpenApiSerializerFieldExtension]:
    build, name = FIELDS[target]

    class FieldSchema(OpenApiSerializerFieldExtension):
        target_class = target

        def get_name(self) -> str | None:
            return name(self.target) if callable(name) else name

        def map_serializer_field(self, auto_schema: AutoSchema, direction: str) -> Schema:
            return build(self.target)

    FieldSchema.__name__ = FieldSchema.__qualname__ = f"{target.__name__}Schema"
    return FieldSchema


FIELD_EXTENSIONS = [_field_extension(target) for target in FIELDS]


# The error envelope ---------------------------------------------------------------------------


class ErrorSerializer(serializers.Serializer):
    """Every failure of the API, with the HTTP status that names its kind."""

    success = api.SuccessField(0)
    # A field named ``fields`` would shadow the attribute of a declared serializer class.
    error = inline_serializer("ErrorDetail", {
        "code": ErrorCodeField(),
        "message": serializers.CharField(),
        "fields": serializers.DictField(child=serializers.ListField(child=serializers.CharField()),
                                        required=False, help_text="Only for `invalid`: each bad "
                                        "field with its messages."),
    })  # fmt: skip


#: The failures that concern a body: an operation that reads none does not answer them.
BODY_ONLY = (411, 413, 415, 501)


def _link(operation_id: str, alone: bool = False, **body: str) -> Schema:
    """A link whose body takes the answer's values; ``alone``: exactly this body (a
    generated one may name another axis)."""
    link = {"operationId": operation_id, "requestBody": body}
    return {**link, "x-schemathesis": {"merge_body": False}} if alone else link


_GROUP_ID = "$response.body#/user_group/provided_id"
_TOKEN = "$response.body#/user_group/token"
#: OpenAPI links from get-or-create's answer to the operations that take its token or id.
LINKS: dict[str, Schema] = {"get_or_create_user_group": {
    "RotateToken": _link("rotate_user_group_token", current_token=_TOKEN),
    "Update": _link("update_user_group", user_group_id=_GROUP_ID),
    "Delete": _link("delete_user_group", alone=True, user_group_id=_GROUP_ID),
    "DeleteByToken": _link("delete_user_group", alone=True, current_token=_TOKEN),
    "MintEmbedToken": _link("mint_embed_token", user_group_id=_GROUP_ID),
    "RevokeEmbedTokens": _link("revoke_embed_tokens", alone=True, user_group_id=_GROUP_ID),
    "ListChildren": {"operationId": "list_user_groups",
                     "parameters": {"parent_user_group_id": _GROUP_ID}},
}}  # fmt: skip


#: Fields whose value is a JSON object: in a query string, JSON text.
JSON_TEXT_FIELDS = (api.MappingField, api.PropertiesField)


def as_query_text(field: serializers.Field, described: Schema) -> Schema:
    """The query parameter that stands for a body field described as ``described``: the
    same string (a query string holds no null), or, for a JSON object, its JSON text as
    OpenAPI writes one (``content``)."""
    if isinstance(field, JSON_TEXT_FIELDS):
        return {"content": {"application/json": {"schema": copy.deepcopy(described)}}}
    alternatives = [
        {key: value for key, value in option.items() if key != "nullable"}
        for option in described.get("oneOf", [described])
        if option.get("type") != "null"
    ]
    schema = alternatives[0] if len(alternatives) == 1 else {**described, "oneOf": alternatives}
    if isinstance(schema.get("type"), list):  # ["string", "null"]
        schema = {**schema, "type": next(kind for kind in schema["type"] if kind != "null")}
    return {"schema": schema}


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


# Operations -----------------------------------------------------------------------------------


class UserGroupAutoSchema(AutoSchema):
    """drf-spectacular's AutoSchema, adding to each operation what its authentication classes
    refuse (their ``refusals``; a host may make it its ``DEFAULT_SCHEMA_CLASS`` for that)."""

    def get_operation(self, *args: Any, **kwargs: Any) -> Schema | None:
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        refusals: dict[str, list[str]] = {}
        for authenticator in self.view.get_authenticators():
            for status, described in getattr(authenticator, "refusals", {}).items():
                refusals.setdefault(str(status), []).append(described)
        for status, described_all in refusals.items():
            error = self.resolve_serializer(ErrorSerializer, "response")
            operation["responses"].setdefault(status, {
                "content": {"application/json": {"schema": error.ref}},
                "description": " Or ".join(described_all),
            })  # fmt: skip
        return operation


class OperationSchema(UserGroupAutoSchema):
    """The app's own views, from what each declares of its methods (``operations``)."""

    @property
    def declared(self) -> "Operation":
        return cast("WorkspaceAPIView", self.view).operations[self.method]

    def get_operation_id(self) -> str:
        return self.declared.operation_id

    def get_summary(self) -> str:
        return self.declared.summary

    def scopes(self) -> list[str]:
        if self.declared.scopes is not None:
            return list(self.declared.scopes)
        required = cast("WorkspaceAPIView", self.view).required_scopes.get(self.method)
        return [required] if required else []

    def get_description(self) -> str:  # type: ignore[override]
        named = " or ".join(f"`{scope}`" for scope in self.scopes())
        return str(super().get_description()) + (f" Scope: {named}." if named else "")

    def get_extensions(self) -> Schema:
        # OpenAPI 3.0 gives an apiKey security requirement no scopes: an extension names
        # the API key scopes (usergroups.scopes) the operation may need.
        return {"x-scopes": self.scopes()}

    def get_request_serializer(self) -> Any:
        return self.declared.request

    def body_in_query(self) -> dict[str, serializers.Field]:
        """The fields of a GET's body that the query string may give instead (a client
        that cannot send a body with GET): each of them."""
        declared = self.declared
        if self.method != "GET" or declared.query is not None or declared.request is None:
            return {}
        return dict(declared.request().fields)

    def get_override_parameters(self) -> list[Any]:
        if self.declared.query is not None:
            return [self.declared.query]
        # Named here; described as their body fields in get_operation.
        return [OpenApiParameter(name, str) for name in self.body_in_query()]

    def get_response_serializers(self) -> Any:
        declared, view = self.declared, cast("WorkspaceAPIView", self.view)
        answers = {200: OpenApiResponse(declared.answer, "Succeeded.")}
        usual = {status: words for status, words in view.failures.items()
                 if declared.request or status not in BODY_ONLY}  # fmt: skip
        for status in sorted({*usual, *declared.failures}):
            words = " ".join(filter(None, (usual.get(status), declared.failures.get(status))))
            answers[status] = OpenApiResponse(ErrorSerializer, words)
        return answers

    def get_operation(self, *args: Any, **kwargs: Any) -> Schema | None:
        """drf-spectacular's, and the body of GET and DELETE, the rules across fields, empty
        query values and links."""
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        request, in_query = self.declared.request, self.body_in_query()
        if request is not None:
            component = self.resolve_serializer(request, "request")
            if component.schema is not None:
                for parameter in operation.get("parameters", []):
                    if parameter["name"] in in_query:
                        described = component.schema["properties"][parameter["name"]]
                        del parameter["schema"]
                        parameter.update(as_query_text(in_query[parameter["name"]], described))
            if component.schema is not None and issubclass(request, api.RequestSerializer):
                component.schema.update(cross_field_rules(request))
                if request.exactly_one_of and "requestBody" in operation:
                    operation["requestBody"]["required"] = True  # no field is, the body is
            if "requestBody" not in operation:
                # drf-spectacular describes no body for GET or DELETE; these take one, in
                # the shape it gives a PUT's. GET's query string may stand in for it.
                operation["requestBody"] = {
                    "content": {"application/json": {"schema": component.ref}},
                    "required": not (self.method == "GET" and operation.get("parameters")),
                }
        for parameter in operation.get("parameters", []):
            optional = parameter["in"] == "query" and not parameter.get("required")
            if optional and parameter["name"] not in in_query:
                parameter["allowEmptyValue"] = True  # DRF reads an empty value as none
        if operation["operationId"] in LINKS:
            operation["responses"]["200"]["links"] = LINKS[operation["operationId"]]
        return operation


class WorkspaceViewSchema(OpenApiViewExtension):
    """The app's views are described by :class:`OperationSchema`, whatever the site's
    ``DEFAULT_SCHEMA_CLASS``."""

    target_class = "usergroups.api.views.WorkspaceAPIView"
    match_subclasses = True

    def view_replacement(self) -> type[APIView]:
        name = f"Documented{self.target.__name__}"
        return type(name, (self.target,), {"schema": OperationSchema()})


# Authentication: for the app's views and for a host's own ------------------------------------


class HeaderAuthenticationScheme(OpenApiAuthenticationExtension):
    """``Authorization: <keyword> <credential>``, for the app's views (API keys) and a host's
    (group and embed tokens too), subclasses with another ``keyword`` included."""

    match_subclasses = True
    credential = ""
    description = ""

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
    description = "Keys start with `ugk_`; each operation names the scopes it needs in `x-scopes`."


class GroupTokenAuthenticationScheme(HeaderAuthenticationScheme):
    target_class = "usergroups.auth.group_token.GroupTokenAuthentication"
    name = "GroupTokenAuth"
    credential = "group token"
    description = "Group tokens start with `ugt_`."


class EmbedTokenAuthenticationScheme(HeaderAuthenticationScheme):
    target_class = "usergroups.auth.embed.EmbedTokenAuthentication"
    name = "EmbedAuth"
    credential = "embed token"
    description = "A short-lived token from mint_embed_token."

"""OpenAPI 3 description of ``/api/user`` for drf-spectacular.

Loaded by the app only when drf-spectacular is installed, so the app itself does not
depend on it. Schemas are written out by hand: they are the contract, not a guess
from serializers.
"""

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiViewExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ComponentRegistry
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
)
from rest_framework.views import APIView

from usergroups.api.views import UserGroupListView, UserGroupView
from usergroups.validators import MAX_ID_LENGTH

Schema = dict[str, Any]

TEXT: Schema = {"type": "string", "minLength": 1, "maxLength": MAX_ID_LENGTH}
TOKEN: Schema = {"type": "string", "pattern": "^ugt_[A-Za-z0-9_-]{43}$"}
MAPPING: Schema = {
    "type": "object",
    "description": "Schema id to data source id. An integer data source id is taken as its decimal string.",
    "additionalProperties": {"oneOf": [TEXT, {"type": "integer"}]},
}
PROPERTIES: Schema = {
    "type": "object",
    "nullable": True,
    "description": "Free-form properties: at most 64 KiB as JSON, nested at most 32 deep.",
    "additionalProperties": True,
}
PARENT: Schema = {
    **TEXT,
    "nullable": True,
    "description": "The `user_group_id` of the parent group, in the same workspace. The "
    "group inherits its ancestors' properties and mapping. Unknown, a cycle, or deeper "
    "than MAX_HIERARCHY_DEPTH (default 5) levels: 400 `invalid`.",
}
GET_OR_CREATE_REQUEST: Schema = {
    "type": "object",
    "required": ["user_group_id"],
    "properties": {
        "user_group_id": {
            **TEXT,
            "description": "The caller's id of the group, unique per workspace.",
        },
        "name": {"type": "string", "maxLength": MAX_ID_LENGTH, "nullable": True},
        "mapping": {**MAPPING, "nullable": True},
        "properties": PROPERTIES,
        "parent_user_group_id": {
            **PARENT,
            "description": "Read on create only. " + PARENT["description"],
        },
    },
}
ROTATE_REQUEST: Schema = {
    "type": "object",
    "required": ["current_token"],
    "properties": {"current_token": {"type": "string", "minLength": 1, "maxLength": MAX_ID_LENGTH}},
}
ROTATED_GROUP: Schema = {
    "type": "object",
    "required": ["team_id", "token", "name", "provided_id"],
    "properties": {
        "team_id": {"type": "integer"},
        "token": TOKEN,
        "name": {"type": "string"},
        "provided_id": {"type": "string"},
    },
}
PARENT_ID: Schema = {
    "type": "string",
    "nullable": True,
    "description": "The parent's `user_group_id`; null for a group at the top.",
}
GROUP: Schema = {
    "type": "object",
    "required": [
        *ROTATED_GROUP["required"],
        "properties",
        "mapping",
        "parent_user_group_id",
        "computed_properties",
        "computed_mapping",
    ],
    "properties": {
        **ROTATED_GROUP["properties"],
        "properties": PROPERTIES,
        "mapping": {"type": "object", "additionalProperties": {"type": "string"}},
        "parent_user_group_id": PARENT_ID,
        "computed_properties": {
            "type": "object",
            "additionalProperties": True,
            "description": "The ancestors' properties merged from the root down, then the "
            "group's own; a top-level key of a deeper group wins.",
        },
        "computed_mapping": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "The ancestors' mappings merged from the root down, then the "
            "group's own; a schema id mapped by a deeper group wins.",
        },
    },
}
ERROR_CODES = [
    "parse_error", "invalid", "not_authenticated", "authentication_failed", "permission_denied",
    "not_found", "method_not_allowed", "conflict", "length_required", "request_too_large",
    "unsupported_media_type", "throttled", "service_unavailable", "token_unavailable",
]  # fmt: skip
ERROR: Schema = {
    "type": "object",
    "required": ["success", "error"],
    "properties": {
        "success": {"type": "integer", "enum": [0]},
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "enum": ERROR_CODES},
                "message": {"type": "string"},
                "fields": {
                    "type": "object",
                    "description": "Only for `invalid`: each bad field with its messages.",
                    "additionalProperties": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    },
}


def _errors(*statuses: int) -> dict[int, OpenApiResponse]:
    described = {
        400: "`parse_error` (not JSON, not an object, too deep) or `invalid` (a bad field, "
        "or a query parameter that is not percent-encoded UTF-8).",
        401: "`not_authenticated` (no header) or `authentication_failed` (bad, revoked or expired key).",
        403: "`permission_denied`: the API key lacks the scope this operation needs "
        "(`x-scopes`); the message names it, and nothing changes.",
        404: "`not_found`: the token is not a current token of this workspace.",
        405: "`method_not_allowed`.",
        409: '`conflict`: the group has child groups; send `"cascade": true` to delete '
        "them with it.",
        411: "`length_required`: a chunked body this server cannot read; send Content-Length.",
        413: "`request_too_large`: the body is over MAX_BODY_BYTES.",
        415: "`unsupported_media_type`: a body that is not JSON.",
        429: "`throttled`: over the per-key rate; see Retry-After.",
        503: "`service_unavailable`: the database failed mid-request (connection lost, lock "
        "timeout); try again after Retry-After seconds. Where a token is shown, also "
        "`token_unavailable`: it was sealed with a secret this server no longer has.",
    }
    return {status: OpenApiResponse(ERROR, description=described[status]) for status in statuses}


QUERY_PARAMETERS = [
    OpenApiParameter("user_group_id", str, description="Used only when the body is empty."),
    OpenApiParameter("name", str, description="Used only when the body is empty."),
    OpenApiParameter("mapping", str, description="JSON text; used only when the body is empty."),
    OpenApiParameter("properties", str, description="JSON text; used only when the body is empty."),
    OpenApiParameter("parent_user_group_id", str, description="Used only when the body is empty."),
]


OPERATIONS: dict[str, Schema] = {
    "GET": {
        "operation_id": "get_or_create_user_group",
        "summary": "Get or create a user group",
        "description": "Returns the group of `user_group_id`, creating it if unknown. "
        "A known group is returned as stored, with the same token.",
        "scopes": ["read", "write"],
        "scope_note": "Scope: `read` to get an existing group, `write` to create one. The "
        "scope is checked after the body is validated; a key without `write` creates "
        "nothing (403 naming `write`).",
        "request": GET_OR_CREATE_REQUEST,
        "parameters": QUERY_PARAMETERS,
        "responses": {
            200: {
                "type": "object",
                "required": ["success", "new_user_group", "user_group"],
                "properties": {
                    "success": {"type": "integer", "enum": [1]},
                    "new_user_group": {"type": "boolean"},
                    "user_group": GROUP,
                },
            },
            **_errors(400, 401, 403, 411, 413, 415, 429, 503),
        },
    },
    "POST": {
        "operation_id": "rotate_user_group_token",
        "summary": "Rotate a user group token",
        "description": "Replaces the token; the old one stops working at once.",
        "scopes": ["rotate"],
        "scope_note": "Scope: `rotate`, checked before the body is read.",
        "request": ROTATE_REQUEST,
        "parameters": [],
        "responses": {
            200: {
                "type": "object",
                "required": ["success", "user_group"],
                "properties": {
                    "success": {"type": "integer", "enum": [1]},
                    "user_group": ROTATED_GROUP,
                },
            },
            **_errors(400, 401, 403, 404, 411, 413, 415, 429, 503),
        },
    },
}


UPDATE_REQUEST: Schema = {
    "type": "object",
    "required": ["user_group_id"],
    "properties": {
        "user_group_id": {**TEXT, "description": "The group to update."},
        "new_user_group_id": {**TEXT, "description": "Renames the group."},
        "name": {"type": "string", "maxLength": MAX_ID_LENGTH},
        "mapping": {**MAPPING, "nullable": True, "description": "Replaces the whole mapping."},
        "properties": {**PROPERTIES, "description": "Replaces the properties; null clears them."},
        "parent_user_group_id": {
            **PARENT,
            "description": "Moves the group, with its subtree, under this group; null "
            "detaches it. " + PARENT["description"],
        },
    },
}
DELETE_REQUEST: Schema = {
    "type": "object",
    "description": "Exactly one of `user_group_id` and `current_token`.",
    "properties": {
        "user_group_id": TEXT,
        "current_token": TEXT,
        "cascade": {
            "type": "boolean",
            "default": False,
            "description": "Also delete every descendant group (without it, a group that "
            "has children is not deleted: 409).",
        },
    },
}
DELETED_GROUP: Schema = {
    "type": "object",
    "required": ["team_id", "name", "provided_id"],
    "properties": {k: ROTATED_GROUP["properties"][k] for k in ("team_id", "name", "provided_id")},
}
LISTED_GROUP: Schema = {
    "type": "object",
    "required": [
        "team_id",
        "name",
        "provided_id",
        "parent_user_group_id",
        "properties",
        "mapping",
        "created_at",
        "updated_at",
    ],
    "properties": {
        **DELETED_GROUP["properties"],
        "parent_user_group_id": PARENT_ID,
        "properties": PROPERTIES,
        "mapping": GROUP["properties"]["mapping"],
        "created_at": {"type": "string", "format": "date-time"},
        "updated_at": {"type": "string", "format": "date-time"},
    },
}


def _success(**properties: Schema) -> Schema:
    return {
        "type": "object",
        "required": ["success", *properties],
        "properties": {"success": {"type": "integer", "enum": [1]}, **properties},
    }


OPERATIONS["PUT"] = {
    "operation_id": "update_user_group",
    "summary": "Update a user group (extension)",
    "description": "Changes the group named by `user_group_id`: given fields replace stored "
    "ones; `new_user_group_id` renames it. The token does not change.",
    "scopes": ["write"],
    "scope_note": "Scope: `write`, checked before the body is read.",
    "request": UPDATE_REQUEST,
    "parameters": [],
    "responses": {
        200: _success(user_group=GROUP),
        **_errors(400, 401, 403, 404, 411, 413, 415, 429, 503),
    },
}
OPERATIONS["DELETE"] = {
    "operation_id": "delete_user_group",
    "summary": "Delete a user group (extension)",
    "description": "Deletes the group named by `user_group_id` or holding `current_token`; "
    "its token stops working at once. With `cascade`, its descendants go too, in one "
    "transaction, and the answer adds `deleted_count` (the group included).",
    "scopes": ["write"],
    "scope_note": "Scope: `write`, checked before the body is read.",
    "request": DELETE_REQUEST,
    "parameters": [],
    "responses": {
        200: {
            **_success(user_group=DELETED_GROUP),
            "properties": {
                **_success(user_group=DELETED_GROUP)["properties"],
                "deleted_count": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Only with `cascade`: the groups deleted.",
                },
            },
        },
        **_errors(400, 401, 403, 404, 409, 411, 413, 415, 429, 503),
    },
}
LIST_OPERATION: Schema = {
    "operation_id": "list_user_groups",
    "summary": "List user groups (extension)",
    "description": "The workspace's groups, oldest first, without tokens.",
    "scopes": ["read"],
    "scope_note": "Scope: `read`, checked before the query is read.",
    "request": None,
    "parameters": [
        OpenApiParameter("page", int, description="1-based page number (default 1)."),
        OpenApiParameter("page_size", int, description="Groups per page, 1 to 500 (default 100)."),
        OpenApiParameter("provided_id_prefix", str, description="Only ids starting with this."),
        OpenApiParameter(
            "parent_user_group_id", str, description="Only the direct children of this group."
        ),
    ],
    "responses": {
        200: _success(
            total_count={"type": "integer"},
            page={"type": "integer"},
            page_size={"type": "integer"},
            user_groups={"type": "array", "items": LISTED_GROUP},
        ),
        **_errors(400, 401, 403, 429, 503),
    },
}


class UserGroupAutoSchema(AutoSchema):
    """Describes each method of the view from :data:`OPERATIONS`."""

    def get_operation(
        self,
        path: str,
        path_regex: str,
        path_prefix: str,
        method: str,
        registry: ComponentRegistry,
    ) -> Schema | None:
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        request = self._operation()["request"]
        if operation is not None and request and "requestBody" not in operation:
            # drf-spectacular describes no body for GET; this GET takes one by design.
            # The shape is the one it gives POST's body (tests/test_openapi.py holds so).
            operation["requestBody"] = {"content": {"application/json": {"schema": request}}}
        if operation is not None:
            # The API key scopes (usergroups.scopes) the operation may need: OpenAPI 3.0
            # gives an apiKey security requirement no scopes, hence an extension.
            operation["x-scopes"] = self._operation()["scopes"]
        return operation

    def _operation(self) -> Schema:
        return OPERATIONS[self.method]

    def get_operation_id(self) -> str:
        return self._operation()["operation_id"]

    def get_summary(self) -> str:
        return self._operation()["summary"]

    # drf-spectacular's signature, not DRF's ViewInspector's (it ignores the same).
    def get_description(self) -> str:  # type: ignore[override]
        return f"{self._operation()['description']} {self._operation()['scope_note']}"

    def get_override_parameters(self) -> list[Any]:
        return self._operation()["parameters"]

    def get_request_serializer(self) -> Any:
        request = self._operation()["request"]
        return {"application/json": request} if request else None

    def get_response_serializers(self) -> Any:
        return self._operation()["responses"]


class UserGroupViewSchema(OpenApiViewExtension):
    target_class = "usergroups.api.views.UserGroupView"

    def view_replacement(self) -> type[APIView]:
        class DocumentedUserGroupView(UserGroupView):
            schema = UserGroupAutoSchema()

        return DocumentedUserGroupView


class UserGroupListAutoSchema(UserGroupAutoSchema):
    def _operation(self) -> Schema:
        return LIST_OPERATION


class UserGroupListViewSchema(OpenApiViewExtension):
    target_class = "usergroups.api.views.UserGroupListView"

    def view_replacement(self) -> type[APIView]:
        class DocumentedUserGroupListView(UserGroupListView):
            schema = UserGroupListAutoSchema()

        return DocumentedUserGroupListView


class APIKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "usergroups.auth.api_key.APIKeyAuthentication"
    name = "TokenAuth"

    def get_security_definition(self, auto_schema: AutoSchema) -> Schema:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <API key>`; keys start with `ugk_` (manage.py create_api_key). "
            "A key holds scopes among `read`, `write`, `rotate`, `embed`; each operation "
            "names those it needs in `x-scopes`, and answers 403 `permission_denied` "
            "without them.",
        }

"""The OpenAPI schema the package ships (through drf-spectacular) and the example serves."""

import pytest
import yaml
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.validation import validate_schema

from usergroups.api.embed_openapi import EMBED_OPERATIONS
from usergroups.api.embed_views import (
    EmbedTokenIntrospectView,
    EmbedTokenRevokeView,
    EmbedTokenView,
    JWKSView,
)
from usergroups.api.openapi import LIST_OPERATION, OPERATIONS
from usergroups.api.views import UserGroupListView, UserGroupView


@pytest.fixture(scope="module")
def schema():
    document = SchemaGenerator().get_schema(request=None, public=True)
    validate_schema(document)  # raises on an invalid OpenAPI 3 document
    return document


def operation(schema, method):
    return schema["paths"]["/api/user"][method]


def test_paths_are_written_as_the_docs_write_them(schema):
    """The API answers with and without a trailing slash; the schema names the form the
    docs use, without it."""
    assert set(schema["paths"]) == {
        "/api/user",
        "/api/user/list",
        "/api/user/embed-token",
        "/api/user/embed-token/introspect",
        "/api/user/embed-token/revoke",
        "/api/user/embed-token/jwks",
    }


def test_both_operations_are_described(schema):
    assert operation(schema, "get")["operationId"] == "get_or_create_user_group"
    assert operation(schema, "post")["operationId"] == "rotate_user_group_token"


def test_get_takes_a_json_body_and_the_query_string_fallback(schema):
    get = operation(schema, "get")
    body = get["requestBody"]["content"]["application/json"]["schema"]
    assert body["required"] == ["user_group_id"]
    assert body["properties"]["user_group_id"]["maxLength"] == 255
    assert {p["name"] for p in get["parameters"]} == {
        "user_group_id",
        "name",
        "mapping",
        "properties",
        "parent_user_group_id",
    }


@pytest.mark.parametrize(
    ("method", "statuses"),
    [
        ("get", {"200", "400", "401", "403", "411", "413", "415", "429", "503"}),
        ("post", {"200", "400", "401", "403", "404", "411", "413", "415", "429", "503"}),
        ("put", {"200", "400", "401", "403", "404", "411", "413", "415", "429", "503"}),
        ("delete", {"200", "400", "401", "403", "404", "409", "411", "413", "415", "429", "503"}),
    ],
)
def test_every_response_is_described(schema, method, statuses):
    responses = operation(schema, method)["responses"]
    assert set(responses) == statuses
    for status, response in responses.items():
        content = response["content"]["application/json"]["schema"]
        if status != "200":
            assert content["properties"]["error"]["required"] == ["code", "message"]


def test_the_hierarchy_is_described(schema):
    get, put, delete = (operation(schema, method) for method in ("get", "put", "delete"))
    group = get["responses"]["200"]["content"]["application/json"]["schema"]
    shown = group["properties"]["user_group"]["properties"]
    assert {"parent_user_group_id", "computed_properties", "computed_mapping"} <= set(shown)
    for method in (get, put):
        body = method["requestBody"]["content"]["application/json"]["schema"]
        assert body["properties"]["parent_user_group_id"]["nullable"] is True
    deleted = delete["responses"]["200"]["content"]["application/json"]["schema"]
    assert deleted["properties"]["deleted_count"]["type"] == "integer"
    body = delete["requestBody"]["content"]["application/json"]["schema"]
    assert body["properties"]["cascade"]["type"] == "boolean"
    listing = schema["paths"]["/api/user/list"]["get"]
    assert "parent_user_group_id" in {p["name"] for p in listing["parameters"]}
    listed = listing["responses"]["200"]["content"]["application/json"]["schema"]
    assert "parent_user_group_id" in listed["properties"]["user_groups"]["items"]["required"]


def test_list_describes_its_failures(schema):
    responses = schema["paths"]["/api/user/list"]["get"]["responses"]
    assert set(responses) == {"200", "400", "401", "403", "429", "503"}


def test_new_error_codes_are_listed(schema):
    codes = schema["paths"]["/api/user"]["get"]["responses"]["503"]["content"]
    codes = codes["application/json"]["schema"]["properties"]["error"]["properties"]["code"]
    assert {"length_required", "service_unavailable"} <= set(codes["enum"])


def test_token_security_scheme(schema):
    schemes = schema["components"]["securitySchemes"]
    assert schemes["TokenAuth"] == {
        "type": "apiKey",
        "in": "header",
        "name": "Authorization",
        "description": schemes["TokenAuth"]["description"],
    }
    assert operation(schema, "get")["security"] == [{"TokenAuth": []}]


def test_example_project_serves_the_schema(client):
    response = client.get("/api/schema/")
    assert response.status_code == 200
    document = yaml.safe_load(response.content)
    assert "get_or_create_user_group" in response.content.decode()
    validate_schema(document)


def test_bodies_of_get_and_delete_have_the_shape_drf_spectacular_gives_put(schema):
    """drf-spectacular describes no body for GET or DELETE; openapi.UserGroupAutoSchema
    adds them, in the shape drf-spectacular itself gives the body of a PUT."""
    put = operation(schema, "put")["requestBody"]
    for method in ("get", "delete"):
        body = operation(schema, method)["requestBody"]
        assert body.keys() == put.keys()
        assert body["content"].keys() == put["content"].keys() == {"application/json"}
        assert body["content"]["application/json"].keys() == {"schema"}
    assert "requestBody" not in schema["paths"]["/api/user/list"]["get"]


@pytest.mark.parametrize(
    ("path", "method", "scopes"),
    [
        ("/api/user", "get", ["read", "write"]),
        ("/api/user", "post", ["rotate"]),
        ("/api/user", "put", ["write"]),
        ("/api/user", "delete", ["write"]),
        ("/api/user/list", "get", ["read"]),
        ("/api/user/embed-token", "post", ["embed"]),
        ("/api/user/embed-token/introspect", "post", ["embed"]),
        ("/api/user/embed-token/revoke", "post", ["embed"]),
    ],
)
def test_every_operation_names_its_scopes_and_describes_the_403(schema, path, method, scopes):
    described = next(
        operations[method]
        for name, operations in schema["paths"].items()
        if name.rstrip("/") == path
    )
    assert described["x-scopes"] == scopes
    for scope in scopes:
        assert f"`{scope}`" in described["description"]
    forbidden = described["responses"]["403"]
    assert "permission_denied" in forbidden["description"]
    codes = forbidden["content"]["application/json"]["schema"]["properties"]["error"]
    assert "permission_denied" in codes["properties"]["code"]["enum"]


def test_the_documented_scopes_are_the_ones_the_views_check():
    """x-scopes of PUT, DELETE, POST and the list are the scopes HasScope checks; GET of
    /api/user, checked by the service, may need either of its two."""
    for method, scope in UserGroupView.required_scopes.items():
        assert OPERATIONS[method]["scopes"] == [scope]
    assert "GET" not in UserGroupView.required_scopes
    assert LIST_OPERATION["scopes"] == [UserGroupListView.required_scopes["GET"]]


# Embed tokens (CONTRACT section 6) ---------------------------------------------------------

EMBED_PATHS = {
    "/api/user/embed-token": (EmbedTokenView, "mint"),
    "/api/user/embed-token/introspect": (EmbedTokenIntrospectView, "introspect"),
    "/api/user/embed-token/revoke": (EmbedTokenRevokeView, "revoke"),
}


def test_the_embed_operations_are_described(schema):
    for path, (view, name) in EMBED_PATHS.items():
        post = schema["paths"][path]["post"]
        assert post["operationId"] == EMBED_OPERATIONS[name]["operation_id"]
        assert post["security"] == [{"TokenAuth": []}]
        assert set(post["responses"]) >= {"200", "400", "401", "403"}
        assert view.required_scopes == {"POST": "embed"}
        body = post["requestBody"]["content"]["application/json"]["schema"]
        assert body == EMBED_OPERATIONS[name]["request"]
    assert set(schema["paths"]["/api/user/embed-token"]["post"]["responses"]) >= {"404"}
    assert set(schema["paths"]["/api/user/embed-token/revoke"]["post"]["responses"]) >= {"404"}


def test_the_mint_answer_and_request_are_the_contracts(schema):
    post = schema["paths"]["/api/user/embed-token"]["post"]
    answer = post["responses"]["200"]["content"]["application/json"]["schema"]
    assert set(answer["required"]) == {
        "success",
        "embed_token",
        "expires_in",
        "expires_at",
        "user_group",
    }
    body = post["requestBody"]["content"]["application/json"]["schema"]
    assert set(body["properties"]) == {
        "user_group_id",
        "resource",
        "origin",
        "expires_in",
        "params",
    }
    assert body["properties"]["expires_in"]["minimum"] == 30


def test_the_jwk_set_needs_no_key(schema):
    jwks = schema["paths"]["/api/user/embed-token/jwks"]
    assert set(jwks) == {"get"}
    assert jwks["get"]["security"] == [{}] and jwks["get"]["x-scopes"] == []
    assert JWKSView.authentication_classes == []

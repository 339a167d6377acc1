"""The OpenAPI schema the package ships (through drf-spectacular) and the example serves."""

import json
import re

import pytest
import yaml
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.validation import validate_schema

from tests.support.embed import docs_host_views
from usergroups.api.audit_views import AuditEventListView
from usergroups.api.embed_serializers import REVOCATION_AXES
from usergroups.api.embed_views import (
    EmbedTokenIntrospectView,
    EmbedTokenRevokeView,
    EmbedTokenView,
    JWKSView,
)
from usergroups.api.views import UserGroupListView
from usergroups.models import AuditEvent
from usergroups.services import audit


@pytest.fixture(scope="module")
def schema():
    document = SchemaGenerator().get_schema(request=None, public=True)
    validate_schema(document)  # raises on an invalid OpenAPI 3 document
    return document


def operation(schema, method):
    return schema["paths"]["/api/user"][method]


def resolved(schema, node):
    """``node`` with its ``$ref`` followed (components are referenced, not repeated)."""
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def body(schema, described):
    return resolved(schema, described["requestBody"]["content"]["application/json"]["schema"])


def answer(schema, described, status="200"):
    content = described["responses"][status]["content"]["application/json"]["schema"]
    return resolved(schema, content)


def nullable(node):
    """Whether a property takes null, as OpenAPI 3.0 or 3.1 says it."""
    if node.get("nullable") or "null" in node.get("type", []):
        return True
    return any(nullable(option) for option in node.get("oneOf", []))


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
        "/api/user/end-user",
        "/api/user/end-user/list",
        "/api/user/audit",
        "/api/user/webhook",
        "/api/user/webhook/list",
    }


def test_both_operations_are_described(schema):
    assert operation(schema, "get")["operationId"] == "get_or_create_user_group"
    assert operation(schema, "post")["operationId"] == "rotate_user_group_token"


def test_get_takes_a_json_body_and_the_query_string_fallback(schema):
    get = operation(schema, "get")
    request = body(schema, get)
    assert request["required"] == ["user_group_id"]
    assert request["properties"]["user_group_id"]["maxLength"] == 255
    assert {p["name"] for p in get["parameters"]} == {
        "user_group_id",
        "name",
        "mapping",
        "properties",
        "parent_user_group_id",
    }


def test_the_query_string_fallback_takes_what_the_body_takes(schema):
    """Each parameter says the value the body's field takes, as text (issue 33: it said
    any string, so a fuzzer sent a mapping that is not JSON): the same string, no null
    and no empty value where the body takes none; a JSON object as JSON text."""
    for path, shape in (("/api/user", "GetOrCreateRequest"), ("/api/user/end-user", "EndUserId")):
        fields = schema["components"]["schemas"][shape]["properties"]
        for parameter in schema["paths"][path]["get"]["parameters"]:
            described = fields[parameter["name"]]
            assert "allowEmptyValue" not in parameter, parameter
            if parameter["name"] in ("mapping", "properties"):
                assert parameter["content"] == {"application/json": {"schema": described}}
                assert "schema" not in parameter
            else:
                assert "null" not in json.dumps(parameter["schema"]), parameter
    (user_group_id,) = [
        p for p in operation(schema, "get")["parameters"] if p["name"] == "user_group_id"
    ]
    assert user_group_id["schema"] == {"type": "string", "minLength": 1, "maxLength": 255,
                                       "pattern": "^[^\\u0000]*$"}  # fmt: skip


@pytest.mark.parametrize(
    ("method", "statuses"),
    [
        (
            "get",
            {"200", "400", "401", "403", "404", "409", "411", "413", "415", "429", "501", "503"},
        ),
        ("post", {"200", "400", "401", "403", "404", "411", "413", "415", "429", "501", "503"}),
        (
            "put",
            {"200", "400", "401", "403", "404", "409", "411", "413", "415", "429", "501", "503"},
        ),
        (
            "delete",
            {"200", "400", "401", "403", "404", "409", "411", "413", "415", "429", "501", "503"},
        ),
    ],
)
def test_every_response_is_described(schema, method, statuses):
    responses = operation(schema, method)["responses"]
    assert set(responses) == statuses
    for status, response in responses.items():
        content = response["content"]["application/json"]["schema"]
        if status != "200":
            assert content == {"$ref": "#/components/schemas/Error"}
            error = resolved(schema, resolved(schema, content)["properties"]["error"])
            assert error["required"] == ["code", "message"]


def test_the_hierarchy_is_described(schema):
    get, put, delete = (operation(schema, method) for method in ("get", "put", "delete"))
    group = resolved(schema, answer(schema, get)["properties"]["user_group"])
    shown = group["properties"]
    assert {"parent_user_group_id", "computed_properties", "computed_mapping"} <= set(shown)
    for method in (get, put):
        assert nullable(body(schema, method)["properties"]["parent_user_group_id"])
    deleted = answer(schema, delete)
    assert deleted["properties"]["deleted_count"]["type"] == "integer"
    assert body(schema, delete)["properties"]["cascade"]["type"] == "boolean"
    listing = schema["paths"]["/api/user/list"]["get"]
    assert "parent_user_group_id" in {p["name"] for p in listing["parameters"]}
    listed = resolved(schema, answer(schema, listing)["properties"]["user_groups"]["items"])
    assert "parent_user_group_id" in listed["required"]


def test_list_describes_its_failures(schema):
    responses = schema["paths"]["/api/user/list"]["get"]["responses"]
    assert set(responses) == {"200", "400", "401", "403", "429", "503"}


def test_new_error_codes_are_listed(schema):
    error = answer(schema, schema["paths"]["/api/user"]["get"], "503")
    codes = resolved(schema, resolved(schema, error["properties"]["error"])["properties"]["code"])
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
    """drf-spectacular describes no body for GET or DELETE; openapi.OperationSchema
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
        ("/api/user/audit", "get", ["read"]),
        ("/api/user/webhook", "post", ["write"]),
        ("/api/user/webhook", "delete", ["write"]),
        ("/api/user/webhook/list", "get", ["read"]),
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
    error = resolved(schema, answer(schema, described, "403")["properties"]["error"])
    assert "permission_denied" in resolved(schema, error["properties"]["code"])["enum"]


def test_the_documented_scopes_are_the_ones_the_views_check(schema):
    """x-scopes of every operation but get-or-create are the scopes HasScope checks (read
    from the view); GET of /api/user, checked by the service, may need either of its two."""
    from django.urls import resolve

    for path, item in schema["paths"].items():
        view = resolve(path).func.view_class
        for method, described in item.items():
            if (path, method) == ("/api/user", "get"):
                assert "GET" not in view.required_scopes
                assert described["x-scopes"] == ["read", "write"]
            elif view is not JWKSView:
                assert described["x-scopes"] == [view.required_scopes[method.upper()]]
    assert UserGroupListView.required_scopes == {"GET": "read"}


# Embed tokens (CONTRACT section 6) ---------------------------------------------------------

EMBED_PATHS = {
    "/api/user/embed-token": (EmbedTokenView, "MintRequest"),
    "/api/user/embed-token/introspect": (EmbedTokenIntrospectView, "EmbedTokenRequest"),
    "/api/user/embed-token/revoke": (EmbedTokenRevokeView, "RevokeRequest"),
}


def test_the_embed_operations_are_described(schema):
    for path, (view, component) in EMBED_PATHS.items():
        post = schema["paths"][path]["post"]
        assert post["operationId"] == view.operations["POST"].operation_id
        assert post["security"] == [{"TokenAuth": []}]
        assert set(post["responses"]) >= {"200", "400", "401", "403"}
        assert view.required_scopes == {"POST": "embed"}
        request = post["requestBody"]["content"]["application/json"]["schema"]
        assert request == {"$ref": f"#/components/schemas/{component}"}
    assert set(schema["paths"]["/api/user/embed-token"]["post"]["responses"]) >= {"404"}
    assert set(schema["paths"]["/api/user/embed-token/revoke"]["post"]["responses"]) >= {"404"}


def test_the_mint_answer_and_request_are_the_contracts(schema):
    post = schema["paths"]["/api/user/embed-token"]["post"]
    assert set(answer(schema, post)["required"]) == {
        "success",
        "embed_token",
        "expires_in",
        "expires_at",
        "user_group",
    }
    request = body(schema, post)
    assert set(request["properties"]) == {
        "user_group_id",
        "resource",
        "origin",
        "expires_in",
        "params",
        "end_user",
        "exclusive",
    }
    assert request["properties"]["expires_in"]["minimum"] == 30
    assert request["properties"]["expires_in"]["maximum"] == 86400
    person = schema["components"]["schemas"]["MintEndUser"]
    assert set(person["properties"]) == {"id", "display_name", "attributes"}
    assert person["required"] == ["id"]


def test_the_revoke_request_takes_exactly_one_axis(schema):
    post = schema["paths"]["/api/user/embed-token/revoke"]["post"]
    request = body(schema, post)
    assert request["allOf"] == [
        {"oneOf": [{"required": [name]} for name in REVOCATION_AXES]},
        {"dependentRequired": {"subtree": ["user_group_id"]}},
    ]
    assert post["requestBody"]["required"] is True
    assert request["properties"]["all"]["const"] is True
    assert set(answer(schema, post)["properties"]) == {"success", "revoked", "user_group"}


def test_introspection_answers_the_end_user_and_the_variables_sources(schema):
    post = schema["paths"]["/api/user/embed-token/introspect"]["post"]
    assert {"end_user_id", "variables", "variable_sources"} <= set(
        answer(schema, post)["properties"]
    )


@pytest.mark.parametrize(
    ("path", "method", "operation_id", "scopes"),
    [
        ("/api/user/end-user", "put", "put_end_user", ["write"]),
        ("/api/user/end-user", "get", "get_end_user", ["read"]),
        ("/api/user/end-user", "delete", "delete_end_user", ["write"]),
        ("/api/user/end-user/list", "get", "list_end_users", ["read"]),
    ],
)
def test_the_end_user_operations_are_published(schema, path, method, operation_id, scopes):
    described = schema["paths"][path][method]
    assert described["operationId"] == operation_id and described["x-scopes"] == scopes
    assert "200" in described["responses"] and "401" in described["responses"]


def test_the_jwk_set_needs_no_key(schema):
    jwks = schema["paths"]["/api/user/embed-token/jwks"]
    assert set(jwks) == {"get"}
    assert jwks["get"]["security"] == [{}] and jwks["get"]["x-scopes"] == []
    assert JWKSView.authentication_classes == []


# Components, constraints and links (issue 23) ---------------------------------------------

SHARED = {"Error", "ErrorDetail", "ErrorCode", "UserGroup", "NamedGroup", "Mapping", "Properties"}


def test_every_body_and_answer_is_a_component(schema):
    """Paths hold references only: each shape is written once, under components."""
    for path, item in schema["paths"].items():
        for method, described in item.items():
            contents = [described.get("requestBody", {}).get("content", {})] + [
                response.get("content", {}) for response in described["responses"].values()
            ]
            for content in contents:
                for media in content.values():
                    assert set(media["schema"]) == {"$ref"}, (path, method, media["schema"])
    assert SHARED <= set(schema["components"]["schemas"])


def test_the_error_envelope_is_one_component_used_by_every_failure(schema):
    refs = {
        response["content"]["application/json"]["schema"]["$ref"]
        for item in schema["paths"].values()
        for described in item.values()
        for status, response in described["responses"].items()
        if not status.startswith("2")
    }
    assert refs == {"#/components/schemas/Error"}


def test_delete_takes_exactly_one_of_id_and_token(schema):
    request = body(schema, operation(schema, "delete"))
    assert request["allOf"] == [
        {"oneOf": [{"required": ["user_group_id"]}, {"required": ["current_token"]}]}
    ]


def test_the_validators_rules_are_stated(schema):
    components = schema["components"]["schemas"]
    user_group_id = components["GetOrCreateRequest"]["properties"]["user_group_id"]
    assert (user_group_id["minLength"], user_group_id["maxLength"]) == (1, 255)
    assert re.fullmatch(user_group_id["pattern"].replace("\\u0000", "\\x00"), "a\x00b") is None
    mapping = components["Mapping"]
    assert mapping["maxProperties"] == 1000
    assert mapping["propertyNames"]["minLength"] == 1  # OpenAPI 3.1 in the example project
    listing = {
        p["name"]: p["schema"] for p in schema["paths"]["/api/user/list"]["get"]["parameters"]
    }
    assert (listing["page_size"]["minimum"], listing["page_size"]["maximum"]) == (1, 500)


@pytest.mark.parametrize(
    "origin",
    [
        "https://example.com",
        "HTTP://Example.COM:8080",
        "http://a.b-c.d:1",
        "http://[::1]:65535",
        "http://x:00080",
        "http://x:0",
        "http://x:65536",
        "http://x:123456",
        "https://example.com/",
        "https://-bad.com",
        "ftp://example.com",
        "https://exa mple.com",
        "https://" + "a" * 64 + ".com",
    ],
)
def test_the_origin_pattern_is_the_validators(schema, origin):
    from usergroups.embed.origins import normalize_origin

    described = schema["components"]["schemas"]["MintRequest"]["properties"]["origin"]
    assert (re.fullmatch(described["pattern"], origin) is not None) == (
        normalize_origin(origin) is not None
    )


def test_get_or_create_links_to_the_operations_that_take_its_token_or_id(schema):
    links = operation(schema, "get")["responses"]["200"]["links"]
    targets = {link["operationId"] for link in links.values()}
    assert {
        "rotate_user_group_token",
        "update_user_group",
        "delete_user_group",
        "mint_embed_token",
    } <= targets
    operation_ids = {
        described["operationId"] for item in schema["paths"].values() for described in item.values()
    }
    assert targets <= operation_ids
    assert links["RotateToken"]["requestBody"] == {
        "current_token": "$response.body#/user_group/token"
    }


def test_a_host_view_using_the_apps_authentication_is_documented_without_warnings(capsys):
    """A host's own view that takes group tokens, embed tokens or API keys names each
    security scheme, and drf-spectacular warns of nothing."""
    from django.urls import path
    from drf_spectacular.types import OpenApiTypes
    from drf_spectacular.utils import extend_schema
    from rest_framework.response import Response
    from rest_framework.views import APIView

    from usergroups.auth.api_key import APIKeyAuthentication
    from usergroups.auth.embed import EmbedTokenAuthentication
    from usergroups.auth.group_token import GroupTokenAuthentication
    from usergroups.auth.permissions import HasGroupToken

    class SalesView(APIView):
        authentication_classes = [
            EmbedTokenAuthentication,
            GroupTokenAuthentication,
            APIKeyAuthentication,
        ]
        permission_classes = [HasGroupToken]

        @extend_schema(responses={200: OpenApiTypes.OBJECT})
        def get(self, request):
            return Response({"total": 1})

    capsys.readouterr()
    document = SchemaGenerator(patterns=[path("sales/", SalesView.as_view())]).get_schema(
        request=None, public=True
    )
    validate_schema(document)
    assert capsys.readouterr().err == ""
    assert document["paths"]["/sales/"]["get"]["security"] == [
        {"EmbedAuth": []},
        {"GroupTokenAuth": []},
        {"TokenAuth": []},
    ]
    # Each authentication class says what it refuses, in the one 401.
    refused = document["paths"]["/sales/"]["get"]["responses"]["401"]["description"]
    assert "token_expired" in refused and "not a current group token" in refused
    schemes = document["components"]["securitySchemes"]
    assert schemes["GroupTokenAuth"]["description"].startswith("`GroupToken <group token>`")
    assert schemes["EmbedAuth"]["description"].startswith("`Embed <embed token>`")


def test_the_docs_host_views_are_described_without_errors_with_their_refusals(capsys):
    """``manage.py spectacular`` over the host views the docs show: no "unable to guess
    serializer", and the embed authentication's 401 and 403 in the app's Error shape."""
    from django.urls import path

    views = docs_host_views()
    assert len(views) >= 4
    capsys.readouterr()
    document = SchemaGenerator(
        patterns=[path(f"view{i}/", view.as_view()) for i, view in enumerate(views)]
    ).get_schema(request=None, public=True)
    validate_schema(document)
    assert capsys.readouterr().err == ""
    for item in document["paths"].values():
        responses = item["get"]["responses"]
        assert {"200", "401", "403"} <= set(responses)
        assert responses["401"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/Error"
        }
        assert "token_expired" in responses["401"]["description"]
        assert "origin_not_allowed" in responses["403"]["description"]
    codes = document["components"]["schemas"]["ErrorCode"]["enum"]
    assert {"token_expired", "origin_not_allowed"} <= set(codes)


def test_the_error_codes_are_the_apps_exceptions_codes(schema):
    """The ErrorCode enum is every ``default_code`` the app's exceptions answer with."""
    from rest_framework.exceptions import APIException

    import usergroups.api.embed_views  # noqa: F401  (defines EndUserDisabled)
    import usergroups.auth.embed  # noqa: F401

    codes = schema["components"]["schemas"]["ErrorCode"]["enum"]

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    ours = {
        str(cls.default_code)
        for cls in subclasses(APIException)
        if cls.__module__.startswith("usergroups.") and "default_code" in vars(cls)
    }
    assert {"token_expired", "end_user_disabled", "conflict", "length_required"} <= ours
    drf = {"parse_error", "invalid", "not_authenticated", "authentication_failed",
           "permission_denied", "not_found", "method_not_allowed", "unsupported_media_type",
           "throttled"}  # fmt: skip
    assert ours - set(codes) == set()
    assert drf <= set(codes) and "not_acceptable" not in codes  # always JSON: no 406
    assert len(codes) == len(set(codes))


def test_a_host_on_openapi_3_0_gets_a_valid_schema_without_warnings(rf, capsys):
    """drf-spectacular's default version is 3.0, which cannot state the rules on keys
    (``propertyNames``) nor constants (``const``): they stay in words and enums there."""
    from drf_spectacular.views import SpectacularJSONAPIView

    capsys.readouterr()
    view = SpectacularJSONAPIView.as_view(custom_settings={"OAS_VERSION": "3.0.3"})
    document = view(rf.get("/api/schema/")).data
    assert capsys.readouterr().err == ""
    assert document["openapi"] == "3.0.3"
    validate_schema(document)
    components = document["components"]["schemas"]
    assert "propertyNames" not in components["Mapping"]
    assert components["Mapping"]["maxProperties"] == 1000
    assert components["Succeeded"] == {"type": "integer", "enum": [1]}
    stored = components["UserGroup"]["properties"]["properties"]
    assert stored["nullable"] is True


def test_the_error_codes_name_end_user_disabled(schema):
    assert "end_user_disabled" in schema["components"]["schemas"]["ErrorCode"]["enum"]


# The audit trail (CONTRACT section 8) --------------------------------------------------------


def test_the_audit_list_is_described(schema):
    described = schema["paths"]["/api/user/audit"]["get"]
    assert described["x-scopes"] == [AuditEventListView.required_scopes["GET"]]
    assert {p["name"] for p in described["parameters"]} == {
        "action", "user_group_id", "end_user_id", "since", "until", "limit", "cursor",
    }  # fmt: skip
    limit = next(p for p in described["parameters"] if p["name"] == "limit")["schema"]
    assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 200, 50)
    page = answer(schema, described)
    assert set(page["required"]) == {"success", "events", "next_cursor"}
    assert nullable(page["properties"]["next_cursor"])
    event = resolved(schema, page["properties"]["events"]["items"])
    # The schema describes the one representation the API answers with.
    assert set(event["properties"]) == set(audit.as_dict(AuditEvent(at=timezone.now())))
    actions = resolved(schema, event["properties"]["action"]["allOf"][0])["enum"]
    assert actions == list(audit.ACTIONS)
    for status in ("400", "401", "403"):
        assert status in described["responses"]


# Webhooks (CONTRACT section 8) ---------------------------------------------------------------


def test_the_webhook_operations_show_the_secret_only_when_made(schema):
    create = schema["paths"]["/api/user/webhook"]["post"]
    made = resolved(schema, answer(schema, create)["properties"]["webhook"])
    assert "secret" in made["properties"] and "secret" in made["required"]
    listing = schema["paths"]["/api/user/webhook/list"]["get"]
    listed = resolved(schema, answer(schema, listing)["properties"]["webhooks"]["items"])
    assert set(listed["properties"]) == {
        "webhook_id", "url", "events", "description", "disabled", "created_at",
    }  # fmt: skip
    request = body(schema, create)
    assert sorted(request["required"]) == ["events", "url"]
    # https only, as the server says without WEBHOOK_ALLOW_PRIVATE; every action prefix.
    assert request["properties"]["url"]["pattern"].startswith("^[Hh][Tt][Tt][Pp][Ss]://")
    items = request["properties"]["events"]["items"]
    prefixes = resolved(schema, items.get("allOf", [items])[0])["enum"]
    assert {"user_group", "embed_token.minted", "webhook.disabled"} <= set(prefixes)
    delete = schema["paths"]["/api/user/webhook"]["delete"]
    assert body(schema, delete)["required"] == ["webhook_id"]
    assert "404" in delete["responses"]


@pytest.mark.parametrize("path", ["/api/user", "/api/user/end-user"])
def test_a_get_takes_a_body_or_the_query_string(schema, path):
    """The body is optional where the query string stands in for it (schemathesis' ST201:
    a body marked required, yet the query-string form worked)."""
    get = schema["paths"][path]["get"]
    assert get["requestBody"]["required"] is False
    assert "query string" in get["description"] and get["parameters"]
    assert schema["paths"][path].get("delete", get)["requestBody"]["required"] is True


def test_the_rules_no_schema_can_state_are_said_in_words(schema):
    components = schema["components"]["schemas"]
    for name in ("GetOrCreateRequest", "UpdateRequest"):
        parent = components[name]["properties"]["parent_user_group_id"]
        assert "404 `not_found`" in parent["description"]
        assert "409 `conflict`" in parent["description"]
    url = components["CreateWebhook"]["properties"]["url"]
    assert "resolve" in url["description"]


def test_the_mint_states_that_exclusive_needs_an_end_user(schema):
    mint = schema["components"]["schemas"]["MintRequest"]
    assert {
        "if": {"properties": {"exclusive": {"const": True}}, "required": ["exclusive"]},
        "then": {"required": ["end_user"]},
    } in mint["allOf"]

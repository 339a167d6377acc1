"""GET /api/user: every rule of get-or-create (CONTRACT.md section 3, tenancy from section 2)."""

import json
import re
from urllib.parse import urlencode

import pytest

from tests.support.api import API_URL, GROUP_KEYS, assert_error, client_for, get_or_create
from tests.support.db_state import database_unchanged, stored_state
from tests.support.factories import APIKeyFactory, SchemaMappingFactory
from usergroups.models import SchemaMapping, UserGroup

TOKEN_SHAPE = re.compile(r"ugt_[A-Za-z0-9_-]{43}")

#: The keys of ``user_group`` in get-or-create and update answers (contract sections 3, 5).


def ok(response) -> dict:
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    return response.json()


def created(response) -> dict:
    body = ok(response)
    assert body["new_user_group"] is True
    return body["user_group"]


def found(response) -> dict:
    body = ok(response)
    assert body["new_user_group"] is False
    return body["user_group"]


# --- Creation -------------------------------------------------------------------------


def test_response_shape_is_exactly_the_contracts(api_client, workspace):
    body = ok(
        get_or_create(
            api_client,
            {
                "user_group_id": "acme",
                "name": "Acme Inc.",
                "mapping": {"sales": "pg-1"},
                "properties": {"region": "EU"},
            },
        )
    )
    assert set(body) == {"success", "new_user_group", "user_group"}
    assert body["success"] == 1 and type(body["success"]) is int
    assert body["new_user_group"] is True
    group = body["user_group"]
    assert set(group) == GROUP_KEYS
    assert type(group["team_id"]) is int
    stored = UserGroup.objects.get(workspace=workspace, provided_id="acme")
    assert group == {
        "team_id": stored.team_id,
        "token": stored.token,
        "name": "Acme Inc.",
        "provided_id": "acme",
        "properties": {"region": "EU"},
        "mapping": {"sales": "pg-1"},
        "parent_user_group_id": None,
        "computed_properties": {"region": "EU"},
        "computed_mapping": {"sales": "pg-1"},
    }


def test_creation_stores_one_group_with_its_mappings(api_client, workspace):
    group = created(
        get_or_create(
            api_client,
            {"user_group_id": "acme", "name": "Acme", "mapping": {"a": "1", "b": "2", "c": "3"}},
        )
    )
    stored = UserGroup.objects.get()
    assert (stored.workspace_id, stored.provided_id, stored.name) == (workspace.pk, "acme", "Acme")
    assert stored.properties is None
    assert dict(stored.mappings.values_list("schema_id", "data_source_id")) == group["mapping"]
    assert SchemaMapping.objects.count() == 3


@pytest.mark.parametrize(
    "body, name",
    [
        ({"user_group_id": "acme"}, "acme"),
        ({"user_group_id": "acme", "name": None}, "acme"),  # null is absent (OpenAPI: nullable)
        ({"user_group_id": "acme", "name": "Acme Inc."}, "Acme Inc."),
        ({"user_group_id": "acme", "name": ""}, ""),
        ({"user_group_id": "acme", "name": "  Ünïcode 名前 🎉 \t"}, "  Ünïcode 名前 🎉 \t"),
        ({"user_group_id": "acme", "name": "n" * 255}, "n" * 255),
    ],
    ids=["absent", "null", "given", "empty", "unicode-and-spaces", "255-chars"],
)
def test_name_echoes_the_request_or_defaults_to_the_id(api_client, body, name):
    assert created(get_or_create(api_client, body))["name"] == name
    assert UserGroup.objects.get().name == name
    assert found(get_or_create(api_client, {"user_group_id": "acme"}))["name"] == name


PROVIDED_IDS = [
    "acme",
    "  leading and trailing spaces  ",
    "tab\there",
    "line\nbreak\r\n",
    " ",
    "Ünïcode ✓ 名前",
    "emoji 🎉👩‍👩‍👧",
    "e\u0301",  # e + combining acute: not normalised to "é"
    "\u00e9",
    "\u200bzero-width",
    "quotes ' \" ` and \\ backslash",
    "1",
    "x" * 255,
    "🎉" * 255,  # 255 characters, 1020 UTF-8 bytes
]


@pytest.mark.parametrize("provided_id", PROVIDED_IDS)
def test_provided_id_echoes_byte_for_byte(api_client, workspace, provided_id):
    group = created(get_or_create(api_client, {"user_group_id": provided_id}))
    assert group["provided_id"] == provided_id
    assert group["provided_id"].encode("utf-8") == provided_id.encode("utf-8")
    assert UserGroup.objects.get().provided_id == provided_id
    again = found(get_or_create(api_client, {"user_group_id": provided_id}))
    assert again["provided_id"] == provided_id
    assert again["token"] == group["token"]


def test_lookalike_ids_are_distinct_groups(api_client):
    tokens = {}
    for provided_id in PROVIDED_IDS:
        tokens[provided_id] = created(get_or_create(api_client, {"user_group_id": provided_id}))[
            "token"
        ]
    for provided_id in PROVIDED_IDS:
        assert (
            found(get_or_create(api_client, {"user_group_id": provided_id}))["token"]
            == (tokens[provided_id])
        )
    assert UserGroup.objects.count() == len(PROVIDED_IDS)


@pytest.mark.parametrize(
    "ids",
    [
        ["Acme", "acme", "acme ", "ACME", " acme"],
        ["a", "a ", "a  ", "a\t"],
        ["straße", "strasse", "STRASSE"],
        ["\u00e9", "e\u0301", "\u00c9"],
    ],
    ids=["case-and-spaces", "trailing-spaces", "sharp-s", "normalisation"],
)
def test_case_and_trailing_space_make_distinct_groups_on_every_database(api_client, ids):
    tokens = [created(get_or_create(api_client, {"user_group_id": i}))["token"] for i in ids]
    assert len(set(tokens)) == len(ids)
    assert sorted(UserGroup.objects.values_list("provided_id", flat=True)) == sorted(ids)
    for provided_id, token in zip(ids, tokens, strict=True):
        group = found(get_or_create(api_client, {"user_group_id": provided_id}))
        assert (group["provided_id"], group["token"]) == (provided_id, token)


@pytest.mark.parametrize(
    "properties",
    [
        {},
        {"region": "EU"},
        {
            "nested": {"list": [1, 2.5, -3, True, False, None, "s"], "deep": {"x": {"y": []}}},
            "unicode ключ": "значение 🎉",
            "escapes": 'quote " backslash \\ newline \n u2028 \u2028',
            "big": 10**20,
            "neg": -1.25,
        },
    ],
    ids=["empty", "flat", "rich"],
)
def test_properties_are_echoed_and_stored(api_client, properties):
    group = created(get_or_create(api_client, {"user_group_id": "acme", "properties": properties}))
    assert group["properties"] == properties
    assert UserGroup.objects.get().properties == properties
    assert found(get_or_create(api_client, {"user_group_id": "acme"}))["properties"] == properties


@pytest.mark.parametrize(
    "body", [{"user_group_id": "acme"}, {"user_group_id": "acme", "properties": None}]
)
def test_properties_are_null_when_absent(api_client, body):
    response = get_or_create(api_client, body)
    group = created(response)
    assert "properties" in group and group["properties"] is None
    assert UserGroup.objects.get().properties is None
    assert found(get_or_create(api_client, body))["properties"] is None


def test_mapping_is_echoed_with_integer_ids_as_decimal_strings(api_client):
    mapping = {"sales": 42, "hr": "pg-hr", "zero": 0, "negative": -7, "huge": 10**30, "s": "01"}
    expected = {
        "sales": "42",
        "hr": "pg-hr",
        "zero": "0",
        "negative": "-7",
        "huge": "1" + "0" * 30,
        "s": "01",
    }
    group = created(get_or_create(api_client, {"user_group_id": "acme", "mapping": mapping}))
    assert group["mapping"] == expected
    assert all(type(value) is str for value in group["mapping"].values())
    stored = UserGroup.objects.get()
    assert dict(stored.mappings.values_list("schema_id", "data_source_id")) == expected
    assert found(get_or_create(api_client, {"user_group_id": "acme"}))["mapping"] == expected


def test_explicit_nulls_in_optional_fields_mean_absent(api_client):
    """The OpenAPI schema documents name, mapping and properties as nullable."""
    body = {"user_group_id": "acme", "name": None, "mapping": None, "properties": None}
    group = created(get_or_create(api_client, body))
    assert (group["name"], group["mapping"], group["properties"]) == ("acme", {}, None)


@pytest.mark.parametrize("mapping", [None, {}], ids=["null", "empty"])
def test_mapping_is_an_empty_object_when_absent_or_empty(api_client, mapping):
    body = {"user_group_id": "acme"} | ({} if mapping is None else {"mapping": mapping})
    assert created(get_or_create(api_client, body))["mapping"] == {}
    assert found(get_or_create(api_client, {"user_group_id": "acme"}))["mapping"] == {}
    assert not SchemaMapping.objects.exists()


def test_mapping_keys_differing_in_case_or_spaces_are_distinct(api_client):
    mapping = {"Sales": "1", "sales": "2", "sales ": "3", "SALES": "4"}
    group = created(get_or_create(api_client, {"user_group_id": "acme", "mapping": mapping}))
    assert group["mapping"] == mapping
    assert SchemaMapping.objects.count() == 4
    assert found(get_or_create(api_client, {"user_group_id": "acme"}))["mapping"] == mapping


def test_mapping_ids_at_255_characters_are_accepted(api_client):
    mapping = {"s" * 255: "d" * 255, "🎉" * 255: "名" * 255}
    assert (
        created(get_or_create(api_client, {"user_group_id": "acme", "mapping": mapping}))["mapping"]
        == mapping
    )
    assert found(get_or_create(api_client, {"user_group_id": "acme"}))["mapping"] == mapping


# --- Existing groups ------------------------------------------------------------------


def test_existing_group_is_returned_unchanged_whatever_else_is_sent(api_client):
    first = created(
        get_or_create(
            api_client,
            {
                "user_group_id": "acme",
                "name": "Acme",
                "mapping": {"sales": "1"},
                "properties": {"region": "EU"},
            },
        )
    )
    with database_unchanged():
        second = found(
            get_or_create(
                api_client,
                {
                    "user_group_id": "acme",
                    "name": "Other name",
                    "mapping": {"sales": "2", "hr": "3"},
                    "properties": {"region": "US", "tier": 1},
                },
            )
        )
    assert second == first


def test_stored_group_made_elsewhere_is_returned_with_its_token(api_client, group):
    SchemaMappingFactory(group=group, schema_id="sales", data_source_id="pg-1")
    with database_unchanged():
        body = ok(get_or_create(api_client, {"user_group_id": group.provided_id}))
    assert body == {
        "success": 1,
        "new_user_group": False,
        "user_group": {
            "team_id": group.team_id,
            "token": group.token,
            "name": group.name,
            "provided_id": group.provided_id,
            "properties": group.properties,
            "mapping": {"sales": "pg-1"},
            "parent_user_group_id": None,
            "computed_properties": group.properties,
            "computed_mapping": {"sales": "pg-1"},
        },
    }


def test_same_token_on_every_call(api_client):
    tokens = {
        get_or_create(api_client, {"user_group_id": "acme"}).json()["user_group"]["token"]
        for _ in range(5)
    }
    assert len(tokens) == 1
    assert UserGroup.objects.count() == 1


# --- Paths, query string, unknown fields, Accept -----------------------------------------


def test_trailing_slash_is_accepted_and_not_redirected(api_client):
    response = get_or_create(api_client, {"user_group_id": "acme"}, path=API_URL + "/")
    assert response.status_code == 200
    token = created(response)["token"]
    # Both paths are the same resource.
    assert found(get_or_create(api_client, {"user_group_id": "acme"}))["token"] == token


@pytest.mark.parametrize("path", ["/api/user//", "/api/users", "/api/user/x", "/api/User"])
def test_other_paths_are_not_the_api(api_client, path):
    response = get_or_create(api_client, {"user_group_id": "acme"}, path=path)
    assert response.status_code == 404
    assert not UserGroup.objects.exists()


def query(**params) -> str:
    return API_URL + "?" + urlencode(params)


def test_fields_may_come_from_the_query_string(api_client):
    path = query(
        user_group_id=" acme ✓",
        name="Acme Inc.",
        mapping=json.dumps({"sales": 42, "hr": "pg-hr"}),
        properties=json.dumps({"region": "EU", "tiers": [1, 2]}),
    )
    group = created(get_or_create(api_client, b"", path=path))
    assert group["provided_id"] == " acme ✓"
    assert group["name"] == "Acme Inc."
    assert group["mapping"] == {"sales": "42", "hr": "pg-hr"}
    assert group["properties"] == {"region": "EU", "tiers": [1, 2]}
    # The same group is found again by the query string and by a body.
    assert (
        found(get_or_create(api_client, b"", path=query(user_group_id=" acme ✓")))["token"]
        == (group["token"])
    )
    assert found(get_or_create(api_client, {"user_group_id": " acme ✓"}))["token"] == group["token"]


def test_query_string_without_content_type(api_client):
    response = api_client.get(query(user_group_id="acme"))
    assert created(response)["provided_id"] == "acme"


def test_query_string_name_defaults_to_the_id(api_client):
    group = created(get_or_create(api_client, b"", path=query(user_group_id="acme")))
    assert (group["name"], group["mapping"], group["properties"]) == ("acme", {}, None)


def test_an_empty_object_is_a_body_and_the_query_string_is_not_read(api_client):
    """The query string stands in for a body that was not sent, not for one that was: an
    OpenAPI client's ``{}`` is the body's rules (the schema's "body or query string")."""
    response = get_or_create(api_client, {}, path=query(user_group_id="from-query"))
    assert_error(response, 400, "invalid", fields=["user_group_id"])
    assert not UserGroup.objects.exists()


def test_body_wins_over_the_query_string(api_client):
    path = query(user_group_id="from-query", name="query name")
    group = created(get_or_create(api_client, {"user_group_id": "from-body"}, path=path))
    assert (group["provided_id"], group["name"]) == ("from-body", "from-body")
    assert list(UserGroup.objects.values_list("provided_id", flat=True)) == ["from-body"]


@pytest.mark.parametrize(
    "params, bad",
    [
        ({"mapping": "{not json"}, {"mapping"}),
        ({"properties": "{'single': 'quotes'}"}, {"properties"}),
        ({"properties": '{"x": NaN}'}, {"properties"}),
        ({"mapping": '{"a": Infinity}'}, {"mapping"}),
        ({"mapping": "", "properties": "["}, {"mapping", "properties"}),
        ({"properties": "[1, 2]"}, {"properties"}),
        ({"mapping": '"text"'}, {"mapping"}),
        ({"properties": "[" * 100_000 + "]" * 100_000}, {"properties"}),
    ],
    ids=["mapping", "properties", "nan", "infinity", "both", "array", "string", "deep"],
)
def test_bad_json_text_in_the_query_string_is_invalid(api_client, params, bad):
    path = query(user_group_id="acme", **params)
    with database_unchanged():
        response = get_or_create(api_client, b"", path=path)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert set(error["fields"]) == bad


@pytest.mark.parametrize(
    "params, bad",
    [
        ({"name": "acme"}, "user_group_id"),
        ({"user_group_id": ""}, "user_group_id"),
        ({"user_group_id": "a\x00b"}, "user_group_id"),
        ({"user_group_id": "x" * 256}, "user_group_id"),
        ({"user_group_id": "acme", "name": "n" * 256}, "name"),
    ],
    ids=["missing-id", "empty-id", "nul", "long-id", "long-name"],
)
def test_query_string_fields_are_validated_like_the_body(api_client, params, bad):
    with database_unchanged():
        response = get_or_create(api_client, b"", path=query(**params))
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"
    assert set(response.json()["error"]["fields"]) == {bad}


def test_unknown_fields_are_ignored(api_client, api_key):
    body = {
        "user_group_id": "acme",
        "team_id": 987654,
        "token": "ugt_" + "A" * 43,
        "success": 0,
        "new_user_group": False,
        "workspace": 12345,
        "extra": {"nested": [1, {"deep": None}]},
    }
    group = created(get_or_create(api_client, body))
    stored = UserGroup.objects.get()
    assert group["team_id"] == stored.team_id != 987654
    assert group["token"] == stored.token != "ugt_" + "A" * 43
    assert stored.workspace_id == api_key.workspace_id
    assert set(group) == GROUP_KEYS


@pytest.mark.parametrize(
    "accept", ["text/html", "application/xml", "text/html,application/xhtml+xml;q=0.9", "*/*"]
)
def test_any_accept_header_gets_json(api_client, anon_api_client, accept):
    response = get_or_create(api_client, {"user_group_id": "acme"}, HTTP_ACCEPT=accept)
    assert created(response)["provided_id"] == "acme"
    failure = get_or_create(anon_api_client, {"user_group_id": "acme"}, HTTP_ACCEPT=accept)
    assert failure.status_code == 401
    assert failure["Content-Type"] == "application/json"
    assert failure.json()["error"]["code"] == "not_authenticated"


@pytest.mark.parametrize(
    "content_type",
    ["application/json; charset=utf-8", "application/json;charset=UTF-8", "Application/JSON"],
)
def test_json_with_a_charset_is_json(api_client, content_type):
    response = get_or_create(api_client, {"user_group_id": "acme"}, content_type=content_type)
    assert created(response)["provided_id"] == "acme"


# --- Tenancy --------------------------------------------------------------------------


def test_same_id_in_two_workspaces_makes_two_groups(api_client, other_api_client):
    ours = created(get_or_create(api_client, {"user_group_id": "acme", "name": "Ours"}))
    theirs = created(get_or_create(other_api_client, {"user_group_id": "acme"}))
    assert theirs["token"] != ours["token"]
    assert theirs["team_id"] != ours["team_id"]
    assert theirs["name"] == "acme"
    assert UserGroup.objects.filter(provided_id="acme").count() == 2
    assert found(get_or_create(api_client, {"user_group_id": "acme"})) == ours
    assert found(get_or_create(other_api_client, {"user_group_id": "acme"})) == theirs


def test_a_key_never_sees_another_workspaces_group(other_api_client, group):
    SchemaMappingFactory(group=group, schema_id="sales", data_source_id="secret-source")
    theirs = created(get_or_create(other_api_client, {"user_group_id": group.provided_id}))
    assert theirs["token"] != group.token
    assert theirs["team_id"] != group.team_id
    assert (theirs["name"], theirs["mapping"], theirs["properties"]) == (
        group.provided_id,
        {},
        None,
    )
    group.refresh_from_db()
    assert group.mappings.count() == 1


def test_keys_of_one_workspace_share_its_groups(api_client, workspace):
    token = created(get_or_create(api_client, {"user_group_id": "acme"}))["token"]
    second_key = client_for(APIKeyFactory(workspace=workspace).key)
    assert found(get_or_create(second_key, {"user_group_id": "acme"}))["token"] == token


# --- Tokens ---------------------------------------------------------------------------


def test_tokens_are_prefixed_url_safe_and_distinct(api_client, api_key):
    tokens = [
        created(get_or_create(api_client, {"user_group_id": f"group-{n}"}))["token"]
        for n in range(25)
    ]
    for token in tokens:
        assert TOKEN_SHAPE.fullmatch(token), token
        assert token != api_key.key
    assert len(set(tokens)) == len(tokens)
    # Not derived from anything guessable: no shared suffixes or prefixes beyond ugt_.
    assert len({token[4:12] for token in tokens}) == len(tokens)


def test_token_is_not_stored_in_the_clear(api_client):
    token = created(get_or_create(api_client, {"user_group_id": "acme"}))["token"]
    assert token[4:] not in repr(stored_state())

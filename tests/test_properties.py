"""Property tests: any JSON value in any field gets a 200 or a 400, never an exception.

Bodies are built from arbitrary JSON (huge integers, any float JSON allows, any Unicode
including lone surrogates and NUL, deep nesting) and sent through DRF's APIClient. A
small model of the contract (:func:`get_or_create_outcome`) says which answer each body
must get: on a 400 the body is the contract's error shape naming exactly the bad fields.
The validators and the strict JSON parser are also fed arbitrary input directly: they
may only raise Django's ValidationError and ValueError.
"""

import json
import math
import uuid

import pytest
from django.core.exceptions import ValidationError
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from tests.support.api import get_or_create, rotate
from tests.support.factories import UserGroupFactory
from usergroups import services
from usergroups.api.parsers import loads_strict, max_body_depth
from usergroups.conf import usergroups_settings
from usergroups.models import UserGroup
from usergroups.validators import (
    MAX_ID_LENGTH,
    check_text,
    json_depth,
    validate_mapping,
    validate_properties,
)

# Hypothesis names groups with any text, a token's shape included: the scan of audit
# events for secrets (tests/conftest.py) would take those names for leaks.
pytestmark = pytest.mark.any_text

PROPERTY_SETTINGS = settings(
    max_examples=300,
    deadline=None,
    database=None,  # nothing written to .hypothesis/ in the work tree
    # The API tests share one database transaction across examples (ids are unique).
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)

# --- Strategies --------------------------------------------------------------------------------

SPECIAL_CHARACTERS = ["\x00", "\ud800", "\udfff", "\ufeff", "\u2028", "\U0001f389", "é", " "]
characters = st.characters(codec=None, categories=None) | st.sampled_from(SPECIAL_CHARACTERS)
texts = (
    st.text(characters, max_size=20)
    | st.text(characters, min_size=250, max_size=260)  # around MAX_ID_LENGTH
    | st.sampled_from(["", "x" * 255, "x" * 256, "ugt_" + "A" * 43, "12"])
)
integers = st.integers() | st.sampled_from(
    [2**63 - 1, 2**63, -(2**63) - 1, 2**64, 10**100, -(10**300), 10**4000]
)
floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [1e300, -1e-300, 5e-324, 1.7976931348623157e308, -0.0, 0.1]
)
scalars = st.none() | st.booleans() | integers | floats | texts
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(characters, max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def nest(value, depth: int, in_objects: bool):
    for _ in range(depth):
        value = {"k": value} if in_objects else [value]
    return value


# Nesting around the limits: the properties limit (32) and the body limit (33).
deep_values = st.builds(nest, json_values, st.integers(0, 40), st.booleans())
# 64 KiB of properties and more (the limit is 65536 bytes of compact JSON).
large_values = st.integers(65_500, 65_560).map(lambda n: {"s": "x" * n})
any_json = json_values | deep_values | large_values

GET_FIELDS = ["user_group_id", "name", "mapping", "properties"]
# Values of the field's own type, so that accepted ones are common too.
PLAUSIBLE = {
    "user_group_id": texts,
    "name": texts | st.none(),
    "mapping": st.dictionaries(st.text(characters, max_size=10), texts | integers, max_size=4)
    | st.none(),
    "properties": st.dictionaries(st.text(characters, max_size=10), any_json, max_size=4)
    | deep_values.filter(lambda value: isinstance(value, dict))
    | st.none(),
}
field_and_value = st.sampled_from(GET_FIELDS).flatmap(
    lambda name: st.tuples(st.just(name), any_json | PLAUSIBLE[name])
)
get_or_create_bodies = (
    st.fixed_dictionaries(
        {"user_group_id": PLAUSIBLE["user_group_id"]},
        optional={
            **{name: PLAUSIBLE[name] for name in GET_FIELDS[1:]},
            "extra": any_json,
        },
    )
    | st.dictionaries(st.sampled_from([*GET_FIELDS, "extra"]) | st.text(characters), any_json)
    | json_values
)


# --- The model -------------------------------------------------------------------------------


def is_text(value, allow_empty: bool = False) -> bool:
    if not isinstance(value, str) or len(value) > MAX_ID_LENGTH or "\x00" in value:
        return False
    if not value and not allow_empty:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def strings_in(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, child in value.items():
            yield key
            yield from strings_in(child)
    elif isinstance(value, list):
        for child in value:
            yield from strings_in(child)


def valid_mapping(value) -> bool:
    if not isinstance(value, dict) or len(value) > usergroups_settings.MAX_MAPPING_ENTRIES:
        return False
    for key, source in value.items():
        if isinstance(source, float) and source.is_integer():
            source = int(source)  # a whole number written with a fraction is an integer (33.4)
        if isinstance(source, int) and not isinstance(source, bool):
            source = str(source)
        if not (is_text(key) and is_text(source)):
            return False
    return True


def valid_properties(value) -> bool:
    if not isinstance(value, dict) or json_depth(value) > usergroups_settings.MAX_PROPERTIES_DEPTH:
        return False
    for text in strings_in(value):
        if "\x00" in text:
            return False
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return False
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    return size <= usergroups_settings.MAX_PROPERTIES_BYTES


FIELD_IS_VALID = {
    "user_group_id": is_text,
    "name": lambda value: value is None or is_text(value, allow_empty=True),
    "mapping": lambda value: value is None or valid_mapping(value),
    "properties": lambda value: value is None or valid_properties(value),
    # Hypothesis also draws the code's own strings as keys: this one among them.
    "parent_user_group_id": lambda value: value is None or is_text(value),
}


def get_or_create_outcome(body) -> tuple[str, set[str]]:
    """What the contract answers to a get-or-create body (already JSON-parsed):
    ``("ok", set())``, ``("parse_error", set())`` or ``("invalid", {bad fields})``."""
    if json_depth(body) > max_body_depth() or not isinstance(body, dict):
        return "parse_error", set()
    bad = {
        name
        for name, is_valid in FIELD_IS_VALID.items()
        if name in body and not is_valid(body[name])
    }
    if "user_group_id" not in body:
        bad.add("user_group_id")
    return ("invalid", bad) if bad else ("ok", set())


def same_json(sent, got) -> bool:
    """Equal as JSON documents; numbers by value (PostgreSQL's jsonb writes 1e300 out)."""
    if isinstance(sent, bool) or isinstance(got, bool):
        return sent is got
    if isinstance(sent, int | float) and isinstance(got, int | float):
        if isinstance(sent, float) or isinstance(got, float):
            return float(sent) == float(got)
        return sent == got
    if isinstance(sent, dict) and isinstance(got, dict):
        return sent.keys() == got.keys() and all(same_json(sent[k], got[k]) for k in sent)
    if isinstance(sent, list) and isinstance(got, list):
        return len(sent) == len(got) and all(map(same_json, sent, got))
    return sent == got


def assert_error_shape(response, code: str, fields: set[str] | None = None, status: int = 400):
    body = response.json()
    assert response.status_code == status, body
    assert body["success"] == 0, body
    error = body["error"]
    assert error["code"] == code, body
    assert isinstance(error["message"], str) and error["message"], body
    if fields is None:
        assert "fields" not in error, body
    else:
        assert set(error["fields"]) == fields, body
        for messages in error["fields"].values():
            assert messages and all(isinstance(m, str) and m for m in messages), body


def as_json_text(value) -> str:
    # ensure_ascii (the default) writes lone surrogates as \ud800 escapes: valid JSON text.
    return json.dumps(value)


# --- Get-or-create -----------------------------------------------------------------------------


def check_get_or_create(api_client, body):
    outcome, bad = get_or_create_outcome(body)
    text = as_json_text(body)
    if len(text.encode()) > usergroups_settings.MAX_BODY_BYTES:
        outcome = "request_too_large"  # refused before it is parsed
    event(outcome)  # --hypothesis-show-statistics shows the mix
    response = get_or_create(api_client, text)
    if outcome == "request_too_large":
        assert_error_shape(response, "request_too_large", status=413)
        return
    if outcome == "parse_error":
        assert_error_shape(response, "parse_error")
        return
    if outcome == "invalid":
        assert_error_shape(response, "invalid", bad)
        return
    if body.get("parent_user_group_id") is not None and response.status_code == 400:
        # A well-formed parent the workspace may not have (test_hierarchy has the rules).
        assert_error_shape(response, "invalid", {"parent_user_group_id"})
        return
    assert response.status_code == 200, response.content[:2000]
    answer = response.json()
    group = answer["user_group"]
    assert answer["success"] == 1
    assert group["provided_id"] == body["user_group_id"]
    if answer["new_user_group"]:
        name = body.get("name")
        assert group["name"] == (body["user_group_id"] if name is None else name)
        mapping = body.get("mapping") or {}
        assert group["mapping"] == {key: str(source) for key, source in mapping.items()}
        assert same_json(body.get("properties"), group["properties"]), group["properties"]


@pytest.mark.django_db
@PROPERTY_SETTINGS
@given(field_value=field_and_value)
@example(field_value=("properties", nest({}, 31, True)))  # 32 deep: the most allowed
@example(field_value=("properties", nest({}, 32, True)))
@example(field_value=("mapping", {"schema": 10**300}))
@example(field_value=("name", "\ud800"))
@example(field_value=("user_group_id", "a\x00b"))
def test_get_or_create_any_value_in_any_field(api_client, field_value):
    field, value = field_value
    body = {"user_group_id": f"prop-{uuid.uuid4()}", field: value}
    check_get_or_create(api_client, body)


@pytest.mark.django_db
@PROPERTY_SETTINGS
@given(body=get_or_create_bodies)
def test_get_or_create_any_body(api_client, body):
    """Several fields at once, unknown ones, or no object at all."""
    check_get_or_create(api_client, body)


@pytest.mark.django_db
@PROPERTY_SETTINGS
@given(params=st.dictionaries(st.sampled_from(GET_FIELDS), texts | any_json.map(json.dumps)))
def test_get_or_create_from_query_string(api_client, params):
    """The query string path (no body): any text in any parameter, 200 or 400."""
    params = {
        name: value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        for name, value in params.items()
    }
    response = api_client.get("/api/user", params)
    if response.status_code == 200:
        assert response.json()["user_group"]["provided_id"] == params["user_group_id"]
        return
    body = response.json()
    assert response.status_code == 400, body
    assert body["error"]["code"] == "invalid", body
    assert set(body["error"]["fields"]) <= {*params, "user_group_id"}, body


# --- Stored and read back ------------------------------------------------------------------

# Text every database stores as given: any character but NUL and lone surrogates.
storable_texts = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12)
storable_json = st.recursive(
    st.none() | st.booleans() | integers | floats | storable_texts,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(storable_texts, children, max_size=4)
    ),
    max_leaves=16,
)
storable_properties = st.dictionaries(storable_texts, storable_json, max_size=5)


def compact(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.django_db
@settings(PROPERTY_SETTINGS, max_examples=200)
@given(properties=storable_properties)
@example(properties={"v": [1e300, 1e-300, -0.0, 0.1, 2.0, 10**300], "b": {"z": 1, "a": 2}})
def test_properties_read_back_from_the_database_as_written(workspace, properties):
    """Any valid value, read back through the ORM and through get-or-create's own query:
    the same compact JSON text (types, sign of zero and key order included), which is
    the text the size limit was checked on."""
    assert valid_properties(properties)
    group = UserGroupFactory(workspace=workspace, properties=properties)
    from_orm = UserGroup.objects.get(pk=group.pk).properties
    from_api_query = services.groups.find_group(workspace.pk, group.provided_id).properties
    assert compact(from_orm) == compact(properties)
    assert compact(from_api_query) == compact(properties)


# --- Rotation --------------------------------------------------------------------------------


@pytest.mark.django_db
@PROPERTY_SETTINGS
@given(value=any_json)
@example(value="ugt_" + "A" * 43)
@example(value="x" * 256)
def test_rotate_any_value_as_current_token(api_client, value):
    """No group holds it: 404 for a string the field takes, else 400 naming the field."""
    response = rotate(api_client, as_json_text({"current_token": value}))
    if json_depth(value) >= max_body_depth():
        assert_error_shape(response, "parse_error")
    elif is_text(value):
        assert response.status_code == 404, response.content
        assert response.json()["error"]["code"] == "not_found"
    else:
        assert_error_shape(response, "invalid", {"current_token"})


@pytest.mark.django_db
@PROPERTY_SETTINGS
@given(name=st.text(characters, max_size=10), value=any_json)
def test_rotate_ignores_any_other_field(api_client, workspace, name, value):
    group = UserGroupFactory(workspace=workspace)
    body = {name: value, "current_token": group.token}
    response = rotate(api_client, as_json_text(body))
    if json_depth(body) > max_body_depth():
        assert_error_shape(response, "parse_error")
    else:
        assert response.status_code == 200, response.content
        assert response.json()["user_group"]["token"] != group.token


# --- Validators and parser, called directly --------------------------------------------------


@settings(PROPERTY_SETTINGS, max_examples=800)
@given(value=any_json)
def test_validators_raise_only_validation_error(value):
    for validate in (
        check_text,
        lambda v: check_text(v, allow_empty=True),
        validate_mapping,
        validate_properties,
    ):
        try:
            validate(value)
        except ValidationError:
            pass
    # And they accept exactly what the model of the contract above accepts.
    assert valid_mapping(value) == _accepts(validate_mapping, value)
    assert valid_properties(value) == _accepts(validate_properties, value)
    assert is_text(value) == _accepts(check_text, value)


def _accepts(validate, value) -> bool:
    try:
        validate(value)
    except ValidationError:
        return False
    return True


@settings(PROPERTY_SETTINGS, max_examples=800)
@given(
    data=st.binary(max_size=200)
    | any_json.map(lambda v: as_json_text(v).encode())
    | st.builds(
        lambda text, cut, junk: text[:cut] + junk + text[cut:],
        any_json.map(lambda v: as_json_text(v).encode()),
        st.integers(0, 50),
        st.binary(min_size=1, max_size=4) | st.sampled_from([b"NaN", b"-Infinity", b"\x00"]),
    )
    | st.integers(1, 200_000).map(lambda n: b"[" * n + b"]" * n)
    | st.integers(4000, 5000).map(lambda n: b"1" * n)
)
@example(data=b"\xef\xbb\xbf{}")
@example(data=b'{"a": NaN}')
@example(data=b"1" * 4301)
@example(data=b"[" * 100_000)
@example(data='"\ud800"'.encode("utf-8", "surrogatepass"))
def test_loads_strict_raises_only_value_error(data):
    for text in (data, data.decode("latin-1")):
        try:
            value = loads_strict(text, max_body_depth())
        except ValueError:
            continue
        assert json_depth(value) <= max_body_depth()
        assert not any(
            isinstance(number, float) and not math.isfinite(number) for number in _numbers_in(value)
        )


def _numbers_in(value):
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, int | float):
            yield node

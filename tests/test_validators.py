"""The shared validators (API and admin alike), called directly, at their boundaries."""

import json
import math

import pytest
from django.core.exceptions import ValidationError
from django.test import override_settings

from usergroups.api.parsers import loads_strict
from usergroups.validators import (
    MAX_ID_LENGTH,
    check_text,
    json_depth,
    validate_mapping,
    validate_properties,
)


def code_of(excinfo) -> str:
    return excinfo.value.error_list[0].code


def nested_lists(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


# --- check_text -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", ["a", " ", "x" * 255, "é" * 255, "🎉" * 255, "  spaced  ", "tab\t", "\u2028"]
)
def test_check_text_returns_what_it_accepts_unchanged(value):
    assert check_text(value) is value


@pytest.mark.parametrize(
    "value, code",
    [
        ("", "blank"),
        ("x" * 256, "max_length"),
        ("🎉" * 256, "max_length"),
        ("a\x00b", "null_characters"),
        ("\x00", "null_characters"),
        ("\ud800", "surrogates"),
        ("ok\udfffok", "surrogates"),
        (1, "invalid"),
        (None, "invalid"),
        (b"bytes", "invalid"),
        (["a"], "invalid"),
    ],
)
def test_check_text_refuses(value, code):
    with pytest.raises(ValidationError) as excinfo:
        check_text(value)
    assert code_of(excinfo) == code


def test_check_text_options():
    assert check_text("", allow_empty=True) == ""
    assert check_text("abc", max_length=3) == "abc"
    with pytest.raises(ValidationError):
        check_text("abcd", max_length=3)
    with pytest.raises(ValidationError):  # empty allowed, NUL still not
        check_text("\x00", allow_empty=True)
    assert MAX_ID_LENGTH == 255


# --- validate_mapping -------------------------------------------------------------------------


def test_mapping_integers_become_decimal_strings():
    assert validate_mapping({"a": 42, "b": "x", "c": 0, "d": -3, "e": 10**100, "f": -2.0}) == {
        "a": "42",
        "b": "x",
        "c": "0",
        "d": "-3",
        "e": str(10**100),
        "f": "-2",
    }


def test_mapping_boundaries_are_accepted():
    mapping = {"k" * 255: "v" * 255, "🎉" * 255: "名" * 255, "a": 10**254}
    assert validate_mapping(mapping) == {
        "k" * 255: "v" * 255,
        "🎉" * 255: "名" * 255,
        "a": str(10**254),
    }
    assert validate_mapping({}) == {}


@pytest.mark.parametrize(
    "value",
    [
        None,
        [],
        [["a", "b"]],
        "a",
        1,
        True,
        {"": "x"},
        {"a": ""},
        {"k" * 256: "v"},
        {"a": "v" * 256},
        {"a": 10**255},
        {"a": 1.5},
        {"a": math.inf},
        {"a": True},
        {"a": False},
        {"a": None},
        {"a": {"b": "c"}},
        {"a": ["b"]},
        {"a\x00": "b"},
        {"a": "b\x00"},
        {"\ud800": "b"},
        {"a": "\udc00"},
        {1: "a"},
    ],
)
def test_mapping_refuses(value):
    with pytest.raises(ValidationError) as excinfo:
        validate_mapping(value)
    assert code_of(excinfo) in {"invalid", "max_length"}


def test_mapping_entry_limit():
    assert len(validate_mapping({f"s{n}": "d" for n in range(1000)})) == 1000
    with pytest.raises(ValidationError) as excinfo:
        validate_mapping({f"s{n}": "d" for n in range(1001)})
    assert code_of(excinfo) == "max_length"
    with override_settings(USERGROUPS={"MAX_MAPPING_ENTRIES": 2}):
        assert validate_mapping({"a": "1", "b": "2"}) == {"a": "1", "b": "2"}
        with pytest.raises(ValidationError):
            validate_mapping({"a": "1", "b": "2", "c": "3"})


# --- json_depth ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, depth",
    [
        (None, 0),
        ("text", 0),
        (1, 0),
        ({}, 1),
        ([], 1),
        ({"a": 1, "b": "x"}, 1),
        ({"a": {}}, 2),
        ({"a": []}, 2),
        ([[[]]], 3),
        ({"a": [1, {"b": [{}]}], "c": {}}, 5),
        ({"shallow": 1, "deep": nested(5)}, 6),
        (nested(32), 32),
    ],
)
def test_json_depth(value, depth):
    assert json_depth(value) == depth


def test_json_depth_of_very_deep_values_does_not_recurse():
    value: list = []
    for _ in range(200_000):
        value = [value]
    assert json_depth(value) == 200_001


# --- validate_properties ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        {},
        {"a": None, "b": [1, 2.5, True], "c": {"d": "é🎉"}},
        nested(32),
        {"k": "x" * (64 * 1024 - len('{"k":""}'))},
        {"k": "é" * ((64 * 1024 - len('{"k":""}')) // 2)},
    ],
    ids=["empty", "mixed", "32-deep", "64KiB-ascii", "64KiB-utf8"],
)
def test_properties_accepted(value):
    assert validate_properties(value) is value


@pytest.mark.parametrize(
    "value, code",
    [
        (None, "invalid"),
        ([], "invalid"),
        ("{}", "invalid"),
        (1, "invalid"),
        (nested(33), "too_deep"),
        ({"a": nested_lists(32)}, "too_deep"),
        ({"k": "x" * (64 * 1024 - len('{"k":""}') + 1)}, "too_large"),
        ({"k": "é" * ((64 * 1024 - len('{"k":""}')) // 2) + "x"}, "too_large"),
        ({"a\x00": 1}, "null_characters"),
        ({"a": "\x00"}, "null_characters"),
        ({"a": [1, {"b": ["c\x00"]}]}, "null_characters"),
        ({"a": {"b\x00": 1}}, "null_characters"),
        ({"a": "\ud800"}, "surrogates"),
        ({"\udc00": 1}, "surrogates"),
        ({"a": [{"b": "x\ud800y"}]}, "surrogates"),
        ({"a": math.nan}, "invalid"),
        ({"a": [math.inf]}, "invalid"),
        ({"a": -math.inf}, "invalid"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_properties_refused(value, code):
    with pytest.raises(ValidationError) as excinfo:
        validate_properties(value)
    assert code_of(excinfo) == code


def test_properties_size_counts_compact_utf8_json():
    value = {"k": "é" * 10}
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    assert size == 28
    with override_settings(USERGROUPS={"MAX_PROPERTIES_BYTES": 28}):
        assert validate_properties(value) is value
    with override_settings(USERGROUPS={"MAX_PROPERTIES_BYTES": 27}):
        with pytest.raises(ValidationError):
            validate_properties(value)


def test_properties_depth_follows_the_setting():
    with override_settings(USERGROUPS={"MAX_PROPERTIES_DEPTH": 2}):
        assert validate_properties({"a": {}}) == {"a": {}}
        with pytest.raises(ValidationError):
            validate_properties({"a": {"b": {}}})


# --- loads_strict (the parser's JSON reader, used for the query string too) ----------------


@pytest.mark.parametrize(
    "text, value",
    [
        ('{"a": 1}', {"a": 1}),
        (b'{"a": "\xc3\xa9"}', {"a": "é"}),
        ("[]", []),
        ('"s"', "s"),
        ('{"a": "\\ud800"}', {"a": "\ud800"}),  # valid JSON: refused later, by the validators
    ],
)
def test_loads_strict_reads_rfc_8259_json(text, value):
    assert loads_strict(text, 32) == value


@pytest.mark.parametrize(
    "text",
    [
        "NaN",
        '{"a": Infinity}',
        "[-Infinity]",
        "",
        "{",
        b"\xff",
        b"\xef\xbb\xbf{}",
        "[" * 100_000 + "]" * 100_000,
        "[[[]]]",  # deeper than the limit below
    ],
)
def test_loads_strict_raises_value_error(text):
    with pytest.raises(ValueError):
        loads_strict(text, 2)

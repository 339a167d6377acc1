"""Group properties as SQL variables: parameters, never interpolation, on the real database."""

import sqlite3

import pytest
from django.db import connection
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.factories import SchemaMappingFactory, UserGroupFactory
from usergroups.auth.group_token import resolve_group_token
from usergroups.contrib.sqlscan import DIALECTS, _placeholders_in_code
from usergroups.contrib.variables import (
    PLACEHOLDER,
    VariableError,
    data_source_for,
    group_variables,
    render_sql,
)

HOSTILE = [
    "EU' OR '1'='1",
    "EU'; DROP TABLE usergroups_sales; --",
    'EU" OR ""="',
    "EU /* comment */",
    "EU -- trailing",
    "EU\\'; SELECT 1; --",
    "%s %(x)s %%",
    "{{ region }}",
]


@pytest.fixture
def sales(transactional_db):
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE usergroups_sales (region VARCHAR(200), amount INTEGER)")
        cursor.executemany(
            "INSERT INTO usergroups_sales (region, amount) VALUES (%s, %s)",
            [("EU", 10), ("US", 20), ("APAC", 30), ("100%", 40)],
        )
    yield
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE usergroups_sales")


def run(query, variables):
    sql, params = render_sql(query, variables)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return sorted(cursor.fetchall())


def test_value_becomes_a_parameter():
    assert render_sql("SELECT 1 WHERE r = {{ region }}", {"region": "EU"}) == (
        "SELECT 1 WHERE r = %s",
        ["EU"],
    )


def test_placeholders_allow_spacing_and_repeat():
    sql, params = render_sql("{{a}} {{  a  }} {{ b }}", {"a": 1, "b": None})
    assert (sql, params) == ("%s %s %s", [1, 1, None])


def test_filters_rows(sales):
    assert run(
        "SELECT region, amount FROM usergroups_sales WHERE region = {{ region }}", {"region": "EU"}
    ) == [("EU", 10)]


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_values_match_nothing_and_break_nothing(sales, value):
    query = "SELECT region FROM usergroups_sales WHERE region = {{ region }}"
    assert run(query, {"region": value}) == []
    assert len(run("SELECT region FROM usergroups_sales", {})) == 4  # the table is intact


def test_literal_percent_signs_survive(sales):
    query = "SELECT region FROM usergroups_sales WHERE region LIKE '%0%%' AND amount > {{ floor }}"
    assert run(query, {"floor": 0}) == [("100%",)]


def test_list_expands_to_in(sales):
    query = "SELECT region FROM usergroups_sales WHERE region IN {{ regions }}"
    assert run(query, {"regions": ["EU", "US", "x' OR 1=1 --"]}) == [("EU",), ("US",)]


def test_empty_list_matches_nothing(sales):
    assert (
        run("SELECT region FROM usergroups_sales WHERE region IN {{ regions }}", {"regions": []})
        == []
    )


def test_unknown_variable_is_a_clear_error():
    with pytest.raises(VariableError, match="Unknown variable.*missing"):
        render_sql("SELECT {{ region }}, {{ missing }}", {"region": "EU"})


@pytest.mark.parametrize("value", [{"nested": 1}, [["a"]], "EU\x00", float("nan"), object()])
def test_values_sql_cannot_take_are_refused(value):
    with pytest.raises(VariableError):
        render_sql("SELECT {{ v }}", {"v": value})


def test_nul_is_refused_before_the_database(sales):
    with pytest.raises(VariableError, match="NUL"):
        run(
            "SELECT region FROM usergroups_sales WHERE region = {{ r }}",
            {"r": "EU\x00'; DROP TABLE x"},
        )


def record(group):
    return resolve_group_token(group.token)


def test_group_variables_are_its_properties(db):
    group = record(UserGroupFactory(properties={"region": "EU", "tier": 2}))
    assert group_variables(group) == {"region": "EU", "tier": 2}
    assert group_variables(record(UserGroupFactory(properties=None))) == {}


def test_data_source_for_schema_reads_the_record_alone(db, django_assert_num_queries):
    mapping = SchemaMappingFactory(schema_id="sales", data_source_id="warehouse-eu")
    group = record(mapping.group)
    with django_assert_num_queries(0):
        assert data_source_for(group, "sales") == "warehouse-eu"
        assert data_source_for(group, "unknown") is None


# --- Placeholders inside quotes or comments (issue 9, finding 5) -------------------------

# Each query puts {{ v }} where some database reads it as part of a string, an
# identifier or a comment: refused, whatever the value.
QUOTED = {
    "single quotes": "SELECT region FROM usergroups_sales WHERE region = '{{ v }}'",
    "single quotes, text around": "SELECT region FROM usergroups_sales WHERE region = 'x {{ v }} y'",
    "doubled quote inside": "SELECT region FROM usergroups_sales WHERE region = 'it''s {{ v }}'",
    "double quotes": 'SELECT region FROM usergroups_sales WHERE "{{ v }}" = region',
    "backticks": "SELECT region FROM usergroups_sales WHERE `{{ v }}` = region",
    "E string": "SELECT region FROM usergroups_sales WHERE region = E'{{ v }}'",
    "E string, escaped quote": "SELECT region FROM usergroups_sales WHERE region = e'\\' {{ v }} '",
    "E string after a number": "SELECT 1e'\\' {{ v }} '",
    "backslash escape (MySQL)": "SELECT region FROM usergroups_sales WHERE region = 'C:\\' OR {{ v }} '",
    "backslash in double quotes": 'SELECT "\\" {{ v }} "',
    "dollar quotes": "SELECT region FROM usergroups_sales WHERE region = $${{ v }}$$",
    "tagged dollar quotes": "SELECT $tag$ $$ {{ v }} $tag$",
    "line comment": "SELECT region FROM usergroups_sales -- {{ v }}\nWHERE region = 'EU'",
    "line comment, no space": "SELECT region FROM usergroups_sales --{{ v }}",
    "hash comment (MySQL)": "SELECT region FROM usergroups_sales # {{ v }}\n",
    "block comment": "SELECT region /* {{ v }} */ FROM usergroups_sales",
    "nested block comment (PostgreSQL)": "SELECT 1 /* /* */ {{ v }} */",
    "executable comment (MySQL)": "SELECT 1 /*! + {{ v }} */",
    "unterminated quote": "SELECT region FROM usergroups_sales WHERE region = 'EU {{ v }}",
    "unterminated comment": "SELECT 1 /* {{ v }}",
    "placeholder split by a comment's end": "SELECT 1 -- {{ v\n}}",
    # Quotes one database reads and another does not: refused for the one that does.
    "dollar string holding a quote (MySQL has no dollar quotes)": "SELECT $$ it's $$, {{ v }}",
    "escaped quote (SQLite has no escapes)": "SELECT E'a\\'b', {{ v }}",
    "hash (an operator on PostgreSQL, a comment on MySQL)": "SELECT 1 # {{ v }}",
}

# Placeholders in code, with quotes and comments around them: accepted.
BARE = {
    "strings before and after": "SELECT 'a''b', {{ v }}, 'c'",
    "identifiers": 'SELECT "region" FROM "usergroups_sales" WHERE "region" = {{ v }}',
    "comments around": "SELECT 1 /* c */ WHERE 1 = {{ v }} -- trailing ' \"\nAND 2 = 2",
    "dollar string before": "SELECT $$ it is $$, {{ v }}",
    "percent in a string": "SELECT '%0%%' LIKE {{ v }}",
    "E as a name": "SELECT e.region FROM usergroups_sales e WHERE e.region = {{ v }}",
    "identifier with dollar": "SELECT a$b$ FROM t WHERE x = {{ v }} AND y = $1",
    "escaped backslash then code": "SELECT 'it''s', E'a\\\\b', {{ v }}",
}

INJECTION = ["' OR 1=1 --", "' OR '1'='1", "x' UNION SELECT region FROM usergroups_sales --"]


@pytest.mark.parametrize("query", QUOTED.values(), ids=QUOTED.keys())
def test_placeholder_inside_quotes_or_a_comment_is_refused(query):
    with pytest.raises(VariableError, match="inside"):
        render_sql(query, {"v": "EU"})


@pytest.mark.parametrize("query", BARE.values(), ids=BARE.keys())
def test_placeholder_in_code_is_accepted(query):
    sql, params = render_sql(query, {"v": "EU"})
    assert params == ["EU"]
    assert "{{" not in sql and sql.count("%s") == 1


@pytest.mark.parametrize("value", INJECTION)
def test_quoted_placeholder_injects_nothing(sales, value):
    """``'{{ v }}'`` with ``' OR 1=1 --`` returned every row on PostgreSQL: now refused
    before the database sees it, and the table is intact."""
    with pytest.raises(VariableError):
        run("SELECT region FROM usergroups_sales WHERE region = '{{ v }}'", {"v": value})
    assert len(run("SELECT region FROM usergroups_sales", {})) == 4


# --- Values no SQL parameter takes safely ---------------------------------------------------

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


@pytest.mark.parametrize(
    "value",
    [
        INT64_MAX + 1,
        INT64_MIN - 1,
        2**70,
        -(10**300),
        float("inf"),
        float("-inf"),
        float("nan"),
        "\x00",
        "EU\x00' OR 1=1 --",
        "\ud800",
        {"a": 1},
        {},
        [["EU"]],
        [{"a": 1}],
        ["EU", ["US"]],
        [2**64],
        [float("nan")],
        ["EU\x00"],
        (("EU",),),
        b"EU",
    ],
)
def test_values_no_parameter_takes_are_refused(value):
    with pytest.raises(VariableError):
        render_sql("SELECT {{ v }}", {"v": value})
    with pytest.raises(VariableError):
        render_sql("SELECT 1 WHERE 1 IN {{ v }}", {"v": [value]})


@pytest.mark.parametrize("value", [INT64_MAX + 1, INT64_MIN - 1, 2**70])
def test_integers_beyond_64_bits_never_reach_the_database(sales, value):
    with pytest.raises(VariableError, match="64-bit"):
        run("SELECT region FROM usergroups_sales WHERE amount < {{ v }}", {"v": value})


@pytest.mark.parametrize(
    "value, rows",
    [(INT64_MAX, 4), (INT64_MIN, 0), (None, 0), (0.5, 0), (-0.0, 0), (1e300, 4)],
)
def test_the_64_bit_range_and_other_scalars_work_on_the_database(sales, value, rows):
    query = "SELECT region FROM usergroups_sales WHERE amount < {{ v }}"
    assert len(run(query, {"v": value})) == rows


@pytest.mark.parametrize(
    "value",
    [
        *INJECTION,
        "EU\\' OR 1=1 -- ",
        "EU\\",
        "EU\n-- ",
        "EU' /*",
        "$$ OR 1=1 $$",
        "EU` OR 1=1",
        "EU\u2019 OR 1=1 --",
        "EU\u02bc OR 1=1 --",
        "😀' OR 1=1 --",
    ],
)
def test_hostile_values_in_lists_match_only_themselves(sales, value):
    query = "SELECT region FROM usergroups_sales WHERE region IN {{ v }}"
    assert run(query, {"v": ["EU", value]}) == [("EU",)]
    assert len(run("SELECT region FROM usergroups_sales", {})) == 4


# --- The scanner against a real SQL lexer -----------------------------------------------

# Pieces of SQL text that open, close or look like quotes and comments (no "[", which
# SQLite reads as a quote and the scanner on purpose does not; no CREATE TRIGGER).
PIECES = ["'", '"', "`", "''", "-", "--", "/*", "*/", "*", "/", "\n", " ", "x", "e", "E"]
PIECES += ["\\", "$$", "$", "#", "1", ",", "{{ v }}", "{{ v }}", "{{", "}}"]


@settings(max_examples=2000, deadline=None, database=None)
@given(pieces=st.lists(st.sampled_from(PIECES), max_size=14))
def test_sqlite_reading_agrees_with_sqlite_itself(pieces):
    """SQLite's own lexer (``sqlite3_complete``: is a ``;`` put there outside any
    string, name or comment?) says which placeholders are code; the scanner agrees."""
    query = "".join(pieces)
    in_code = {
        match.start()
        for match in PLACEHOLDER.finditer(query)
        if sqlite3.complete_statement(query[: match.start()] + ";")
    }
    sqlite = next(dialect for dialect in DIALECTS if dialect.name == "SQLite")
    assert _placeholders_in_code(query, PLACEHOLDER, sqlite) == in_code

"""Group properties as SQL variables: parameters, never interpolation, on the real database."""

import pytest
from django.db import connection

from tests.support.factories import SchemaMappingFactory, UserGroupFactory
from usergroups.variables import VariableError, data_source_for, group_variables, render_sql

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


def test_group_variables_are_its_properties(db):
    group = UserGroupFactory(properties={"region": "EU", "tier": 2})
    assert group_variables(group) == {"region": "EU", "tier": 2}
    assert group_variables(UserGroupFactory(properties=None)) == {}


def test_data_source_for_schema(db):
    mapping = SchemaMappingFactory(schema_id="sales", data_source_id="warehouse-eu")
    group = mapping.group
    assert data_source_for(group, "sales") == "warehouse-eu"
    assert data_source_for(group, "unknown") is None
    group.mapping = {"sales": "cached"}
    assert data_source_for(group, "sales") == "cached"

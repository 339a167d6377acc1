"""The dashboard's one query: a group's sales rows, filtered by its properties.

The host writes the SQL once, with ``{{ regions }}`` where the group's value goes (and
``{{ territory }}``, a person's narrowing, when the token names an end user who has one);
``usergroups.contrib.variables.render_sql`` makes it DB-API SQL plus parameters, so a property
value (however hostile) is only ever data. The data source (the table) comes from the
group's mapping for the schema id ``sales``, through the allow-list in :mod:`.sources`.
"""

from dataclasses import dataclass
from typing import Any

from django.db import connections, router

from example_project.dashboards.sources import DATA_SOURCES
from usergroups.contrib.variables import VariableError, data_source_for, group_variables, render_sql
from usergroups.records import GroupRecord

SCHEMA_ID = "sales"
COLUMNS = ("region", "product", "month", "amount")
# {table} and {columns} are filled from model metadata (quoted identifiers, never input);
# {{ regions }} is the group's variable, filled by render_sql as parameters.
QUERY = (
    "SELECT {columns} FROM {table}"
    " WHERE {region} IN {{{{ regions }}}}"
    " ORDER BY {month}, {region}, {product}"
)
# A person's territory narrows the group's regions: both must hold, so it never widens
# them. Only when the variables have one (a group's own view, or a person without it,
# sees the group's regions).
NARROWED_QUERY = (
    "SELECT {columns} FROM {table}"
    " WHERE {region} IN {{{{ regions }}}} AND {region} IN {{{{ territory }}}}"
    " ORDER BY {month}, {region}, {product}"
)
# The column each variable of the queries is compared with: its values are checked
# against what that column takes before the query runs.
VARIABLE_COLUMNS = {"regions": "region", "territory": "region"}
#: The variables that filter the rows, in the order the dashboard shows them.
FILTERS = ("regions", "territory")
TEXT_TYPES = {"CharField", "TextField"}
INTEGER_TYPES = {"SmallIntegerField", "IntegerField", "BigIntegerField"}


class NoDataSource(LookupError):
    """The group's mapping names no data source this site has for ``sales``."""


@dataclass
class SalesResult:
    data_source: str
    variables: dict[str, Any]
    sql: str
    params: list
    rows: list[dict[str, Any]]


def dashboard_variables(
    group: GroupRecord, variables: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The group's properties as variables (or ``variables``, an embed token's: the
    computed properties, its end user's attributes, its params, each over the one
    before); ``regions`` and ``territory`` may each be one value or a list.

    A missing ``regions`` stays missing: render_sql then refuses the query, rather than
    a group without a filter seeing every row.
    """
    variables = group_variables(group) if variables is None else dict(variables)
    for name in FILTERS:
        if name in variables and not isinstance(variables[name], list | tuple):
            variables[name] = [variables[name]]  # null: [None], IN (NULL), no rows
    return variables


def column_takes(field, value: Any, connection) -> bool:
    """Whether every database compares ``field``'s column with ``value`` without an
    error: text with text, an integer column with an integer in its range; NULL
    with anything. PostgreSQL has no ``varchar = integer``, for one."""
    if value is None:
        return True
    kind = field.get_internal_type()
    if kind in TEXT_TYPES:
        return isinstance(value, str)
    if kind in INTEGER_TYPES:
        if isinstance(value, bool) or not isinstance(value, int):
            return False
        low, high = connection.ops.integer_field_range(kind)
        return low <= value <= high
    return False


def check_variables(model, variables: dict[str, Any], connection) -> None:
    """VariableError unless each value of each variable fits the column it filters."""
    for name, column in VARIABLE_COLUMNS.items():
        field = model._meta.get_field(column)
        values = variables.get(name, [])
        for value in values if isinstance(values, list | tuple) else [values]:
            if not column_takes(field, value, connection):
                kind = "text" if field.get_internal_type() in TEXT_TYPES else "integers"
                raise VariableError(
                    f"Variable {name!r} holds a {type(value).__name__}; "
                    f"the {column} column takes {kind}."
                )


def sales_rows(group: GroupRecord, variables: dict[str, Any] | None = None) -> SalesResult:
    """Run the query for ``group`` on its data source, with its properties as variables
    unless ``variables`` are given. Raises NoDataSource, and VariableError for a value
    the query cannot take, before running it."""
    source = data_source_for(group, SCHEMA_ID)
    model = DATA_SOURCES.get(source) if isinstance(source, str) else None
    if model is None:
        raise NoDataSource(source)
    variables = dashboard_variables(group, variables)
    using = router.db_for_read(model)
    connection = connections[using]
    quote = connection.ops.quote_name
    column = {name: quote(model._meta.get_field(name).column) for name in COLUMNS}
    query = (NARROWED_QUERY if "territory" in variables else QUERY).format(
        columns=", ".join(column[name] for name in COLUMNS),
        table=quote(model._meta.db_table),
        **column,
    )
    check_variables(model, variables, connection)
    sql, params = render_sql(query, variables)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = [dict(zip(COLUMNS, row, strict=True)) for row in cursor.fetchall()]
    used = {name: variables[name] for name in FILTERS if name in variables}
    return SalesResult(data_source=source, variables=used, sql=sql, params=params, rows=rows)


__all__ = [
    "FILTERS",
    "NoDataSource",
    "SalesResult",
    "VariableError",
    "check_variables",
    "column_takes",
    "dashboard_variables",
    "sales_rows",
]

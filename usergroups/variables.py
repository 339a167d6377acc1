"""A group's properties as dashboard variables, and SQL that uses them safely.

``render_sql("SELECT * FROM sales WHERE region = {{ region }}", variables)`` gives
``("SELECT * FROM sales WHERE region = %s", ["EU"])`` for ``cursor.execute``: values
travel as DB-API parameters, never inside the SQL text, so no property value can
change what the query does. Write placeholders bare, not inside quotes.
"""

import math
import re
from collections.abc import Mapping
from typing import Any

from .records import GroupRecord

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
Scalar = str | int | float | bool | None


class VariableError(ValueError):
    """A query names a variable the group lacks, or a value SQL cannot take."""


def group_variables(group: GroupRecord) -> dict[str, Any]:
    """The group's properties, as the variables its dashboards and SQL may use."""
    return dict(group.properties or {})


def data_source_for(group: GroupRecord, schema_id: str) -> str | None:
    """The data source the group reads for ``schema_id``, from its mapping."""
    return group.mapping.get(schema_id)


def _parameter(name: str, value: Any) -> Scalar:
    if isinstance(value, str) and "\x00" in value:
        raise VariableError(f"Variable {name!r} holds a NUL character.")
    if isinstance(value, float) and not math.isfinite(value):
        raise VariableError(f"Variable {name!r} is not a finite number.")
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise VariableError(
        f"Variable {name!r} is a {type(value).__name__}; SQL takes scalars or lists."
    )


def render_sql(query: str, variables: Mapping[str, Any]) -> tuple[str, list[Scalar]]:
    """Replace each ``{{ name }}`` with a placeholder and collect the values in order.

    A list becomes ``(%s, %s, …)`` for ``IN {{ names }}``; an empty list ``(NULL)``,
    which matches nothing. Literal ``%`` signs are doubled, as DB-API's format style wants.
    """
    unknown = sorted({name for name in PLACEHOLDER.findall(query) if name not in variables})
    if unknown:
        raise VariableError(f"Unknown variable(s): {', '.join(unknown)}.")
    params: list[Scalar] = []

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        value = variables[name]
        if isinstance(value, list | tuple):
            if not value:
                return "(NULL)"
            params.extend(_parameter(name, item) for item in value)
            return "(" + ", ".join(["%s"] * len(value)) + ")"
        params.append(_parameter(name, value))
        return "%s"

    return PLACEHOLDER.sub(substitute, query.replace("%", "%%")), params

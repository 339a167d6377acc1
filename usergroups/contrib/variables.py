"""A group's properties as dashboard variables, and SQL that uses them safely.

``render_sql("SELECT * FROM sales WHERE region = {{ region }}", variables)`` gives
``("SELECT * FROM sales WHERE region = %s", ["EU"])`` for ``cursor.execute``: values
travel as DB-API parameters, never inside the SQL text, so no property value can
change what the query does. Placeholders must be written bare: one inside quotes or a
comment is refused (:mod:`usergroups.contrib.sqlscan` says why), and so are values that some
database or driver would take badly.
"""

import math
import re
from collections.abc import Mapping
from typing import Any

from usergroups.contrib.sqlscan import misplaced_placeholder
from usergroups.embed.grant import EmbedGrant
from usergroups.records import GroupRecord

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
Scalar = str | int | float | bool | None
# BIGINT, the widest integer every supported database and driver binds.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class VariableError(ValueError):
    """A query names a variable the group lacks, or a value SQL cannot take."""


def group_variables(source: GroupRecord | EmbedGrant) -> dict[str, Any]:
    """The variables a dashboard and its SQL may use: a group's computed properties (its
    ancestors' from the root down, then its own), with an embed token's locked
    ``params`` laid over them when ``source`` is a grant (``request.auth`` of either
    authentication). Anything else raises TypeError: never an empty, unfiltered set."""
    if isinstance(source, EmbedGrant):
        return dict(source.variables)
    if isinstance(source, GroupRecord):
        return dict(source.computed_properties)
    raise TypeError(f"No variables for a {type(source).__name__}; authenticate the request.")


def data_source_for(source: GroupRecord | EmbedGrant, schema_id: str) -> str | None:
    """The data source the group (of a grant) reads for ``schema_id``, from its computed
    mapping (an ancestor's entry, unless the group maps the schema itself)."""
    group = source.group if isinstance(source, EmbedGrant) else source
    return group.computed_mapping.get(schema_id)


def _parameter(name: str, value: Any) -> Scalar:
    """``value`` if every database takes it as a parameter, else VariableError."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise VariableError(f"Variable {name!r} is an integer outside the signed 64-bit range.")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise VariableError(f"Variable {name!r} is not a finite number.")
        return value
    if isinstance(value, str):
        if "\x00" in value:
            raise VariableError(f"Variable {name!r} holds a NUL character.")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise VariableError(f"Variable {name!r} is not valid Unicode (a lone surrogate).")
        return value
    raise VariableError(
        f"Variable {name!r} holds a {type(value).__name__}; SQL takes a scalar or a flat list."
    )


def render_sql(query: str, variables: Mapping[str, Any]) -> tuple[str, list[Scalar]]:
    """Replace each ``{{ name }}`` with a placeholder and collect the values in order.

    A list becomes ``(%s, %s, …)`` for ``IN {{ names }}``; an empty list ``(NULL)``,
    which matches nothing. Literal ``%`` signs are doubled, as DB-API's format style wants.

    Raises VariableError for an unknown variable, a placeholder inside quotes or a
    comment, a value no parameter takes (NUL, lone surrogates, non-finite floats,
    integers outside 64 bits) and nesting (an object, or a list inside a list).
    """
    unknown = sorted({name for name in PLACEHOLDER.findall(query) if name not in variables})
    if unknown:
        raise VariableError(f"Unknown variable(s): {', '.join(unknown)}.")
    problem = misplaced_placeholder(query, PLACEHOLDER)
    if problem:
        raise VariableError(problem)
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

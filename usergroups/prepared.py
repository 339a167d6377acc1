"""SELECTs of fixed shape, compiled once per database instead of on every request.

On the hot path the ORM spends several times longer building and compiling a query than
the database spends answering it (bench/RESULTS.md has the profile). The statements here
never change shape, so their SQL is made once per database alias from model metadata,
and rows go through the converters the ORM applies, so they come back exactly as
``values_list`` gives them.
"""

from typing import Any

from django.db import connections, router


class PreparedSQL:
    """A fixed SELECT, written once per database from model metadata, run on a cursor.

    ``build(quote_name)`` returns ``(sql, fields)``: the SQL with ``%s`` placeholders and
    the model fields of its result columns, in order.
    """

    def __init__(self, model, build) -> None:
        self.model = model
        self.build = build
        self._prepared: dict[tuple[str, str], tuple[str, list]] = {}

    def _prepare(self, connection) -> tuple[str, list]:
        sql, fields = self.build(connection.ops.quote_name)
        converters = []
        for index, field in enumerate(fields):
            column = field.get_col(field.model._meta.db_table)
            functions = connection.ops.get_db_converters(column) + column.get_db_converters(
                connection
            )
            if functions:
                converters.append((index, functions, column))
        return sql, converters

    def fetch(self, params: list[Any]) -> tuple[str, list[tuple]]:
        """``(database alias, rows)`` for ``params``, read where the ORM would read."""
        using = router.db_for_read(self.model)
        connection = connections[using]
        key = (using, connection.vendor)
        prepared = self._prepared.get(key)
        if prepared is None:
            prepared = self._prepared[key] = self._prepare(connection)
        sql, converters = prepared
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        if converters and rows:
            rows = [_convert(row, converters, connection) for row in rows]
        return using, rows


def _convert(row: tuple, converters: list, connection) -> tuple:
    values = list(row)
    for index, functions, column in converters:
        value = values[index]
        for function in functions:
            value = function(value, column, connection)
        values[index] = value
    return tuple(values)

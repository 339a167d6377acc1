"""Every hand-written SQL statement of the app, and the runner that prepares each once.

On the hot path the ORM spends several times longer building and compiling a query than
the database spends answering it (bench/RESULTS.md has the profile). The statements here
never change shape, so each is written once per database (alias and vendor) from model
metadata, by one builder style: a ``WHERE`` template naming columns by field name
(``"{workspace} = %s"``) and the fields its parameters go to. Rows go through the
converters the ORM applies, so they come back exactly as ``values_list`` gives them.
tests/test_sql.py holds each statement's rows equal to the ORM's answer to the same
question, on every database.

A group statement selects :data:`~usergroups.records.RECORD_FIELDS` of the group, then
``schema_id`` and ``data_source_id`` of its mappings (an outer join: a group without
any has one row of NULLs there), ordered by group and schema id: the rows
:meth:`~usergroups.records.GroupRecord.from_rows` reads. A lineage statement gives the
same rows for the group and each of its ancestors (only what a child inherits:
:data:`~usergroups.records.INHERITED_FIELDS`, the other columns NULL), then their
distance from the group (0 for itself): a child's record in one query, at any depth.
"""

from collections.abc import Sequence
from functools import partial
from typing import Any, NamedTuple

from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import DateTimeField, Field, Model
from django.db.models.expressions import Col

from usergroups import direct
from usergroups.conf import usergroups_settings
from usergroups.models import APIKey, SchemaMapping, UserGroup
from usergroups.prepared import fetch_all as fetch_prepared
from usergroups.records import INHERITED_FIELDS, RECORD_FIELDS

Row = tuple[Any, ...]


class Query(NamedTuple):
    """A statement as one database writes it."""

    sql: str
    #: The model fields of the result columns, in order.
    columns: list[Field]
    #: The model fields each ``%s`` stands for, in order.
    params: list[Field]
    #: How many leading columns rows with the same first column repeat (a group's
    #: columns on each of its mapping rows): converted once per group, not per row.
    shared: int = 0


class Table:
    """A model's table under an alias, quoted for one database; ``table["name"]`` is
    the aliased column of the field ``name``, so WHERE templates can name fields."""

    def __init__(self, connection: BaseDatabaseWrapper, model: type[Model], alias: str) -> None:
        self.connection, self.model, self.alias = connection, model, alias

    def __str__(self) -> str:
        return f"{self.connection.ops.quote_name(self.model._meta.db_table)} {self.alias}"

    def field(self, name: str) -> Field:
        field = self.model._meta.get_field(name)
        if not isinstance(field, Field):  # a reverse relation has no column
            raise TypeError(f"{self.model.__name__}.{name} is not a column")
        return field

    def column(self, name: str) -> str:
        """The quoted column of the field ``name``, without the alias."""
        column = self.field(name).column
        if column is None:  # not stored (e.g. a generic relation)
            raise TypeError(f"{self.model.__name__}.{name} has no column")
        return self.connection.ops.quote_name(column)

    def __getitem__(self, name: str) -> str:
        return f"{self.alias}.{self.column(name)}"


class Statement:
    """A fixed SELECT on ``model``'s table, written per database, run on a cursor.

    ``where`` names columns by field name (``"{provided_id} = %s"``); ``params`` names
    the field of each ``%s``, whose values are adapted as the ORM would (datetimes).
    ``for_update`` locks the rows read, where the database can.
    """

    def __init__(
        self,
        model: type[Model],
        where: str,
        params: Sequence[str],
        *,
        for_update: bool = False,
    ) -> None:
        self.model = model
        self.where = where
        self.param_names = tuple(params)
        self.for_update = for_update
        self._prepared: dict[tuple[str, str], _Prepared] = {}

    def build(self, connection: BaseDatabaseWrapper) -> Query:
        table = Table(connection, self.model, "t")
        columns = list(self.model._meta.concrete_fields)
        select = ", ".join(table[field.name] for field in columns)
        sql = f"SELECT {select} FROM {table} WHERE {self.where.format_map(table)}"
        return Query(sql + self._lock(connection, table), columns, self._params(table))

    def _params(self, table: Table) -> list[Field]:
        return [table.field(name) for name in self.param_names]

    def extra_params(self) -> list[Any]:
        """Parameters the statement adds after the caller's (none here)."""
        return []

    def _lock(self, connection: BaseDatabaseWrapper, table: Table) -> str:
        if not self.for_update or not connection.features.has_select_for_update:
            return ""
        # PostgreSQL refuses to lock the nullable side of an outer join: lock ``table``.
        of = (table.alias,) if connection.features.has_select_for_update_of else ()
        return " " + connection.ops.for_update_sql(of=of)

    def fetch(self, params: Sequence[Any]) -> tuple[str, list[Row]]:
        """``(database alias, rows)`` for ``params``, read where the ORM would read."""
        params = [*params, *self.extra_params()]
        if self.for_update:
            using = router.db_for_write(self.model)
        else:
            using = router.db_for_read(self.model)
        connection = connections[using]
        key = (using, connection.vendor)
        prepared = self._prepared.get(key)
        if prepared is None:
            prepared = self._prepared[key] = _Prepared.of(self.build(connection), connection)
        if prepared.adapters:
            params = [
                adapt(value) if adapt else value
                for value, adapt in zip(params, prepared.adapters, strict=True)
            ]
        rows = _fetch_all(connection, prepared, params)
        if prepared.converters and rows:
            rows = prepared.convert_rows(rows, connection)
        return using, rows


class GroupStatement(Statement):
    """A SELECT of groups (alias ``g``) with their mappings (alias ``m``)."""

    def __init__(self, where: str, params: Sequence[str], *, for_update: bool = False) -> None:
        super().__init__(UserGroup, where, params, for_update=for_update)

    def build(self, connection: BaseDatabaseWrapper) -> Query:
        group = Table(connection, UserGroup, "g")
        mapping = Table(connection, SchemaMapping, "m")
        mapping_fields = ("schema_id", "data_source_id")
        columns = [group.field(name) for name in RECORD_FIELDS]
        columns += [mapping.field(name) for name in mapping_fields]
        select = ", ".join(
            [*(group[name] for name in RECORD_FIELDS), *(mapping[name] for name in mapping_fields)]
        )
        sql = (
            f"SELECT {select} FROM {group}"
            f" LEFT OUTER JOIN {mapping} ON {mapping['group']} = {group['team_id']}"
            f" WHERE {self.where.format_map(group)}"
            f" ORDER BY {group['team_id']}, {mapping['schema_id']}"
        )
        query = Query(sql + self._lock(connection, group), columns, self._params(group))
        return query._replace(shared=len(RECORD_FIELDS))


class LineageStatement(Statement):
    """The group that ``where`` finds (at most one) and its ancestors, with their
    mappings: the rows of a :class:`GroupStatement`, then the distance from the group
    (0 for itself, 1 for its parent, ...), ordered by distance and schema id.

    One recursive CTE (``WITH RECURSIVE``: SQLite, PostgreSQL and MariaDB all have it)
    walks up from the group, carrying its columns, so that a get, a token's resolution
    or an embed token's verification costs one query at any depth. The walk stops after
    :func:`walk_limit` levels, which keeps a corrupted row from looping. Locking reads
    use a :class:`GroupStatement`: a recursive CTE's rows cannot be locked.
    """

    def __init__(self, where: str, params: Sequence[str]) -> None:
        super().__init__(UserGroup, where, params)

    def build(self, connection: BaseDatabaseWrapper) -> Query:
        group = Table(connection, UserGroup, "g")
        mapping = Table(connection, SchemaMapping, "m")
        names = [group.column(name) for name in RECORD_FIELDS]
        carried = ", ".join(group[name] for name in RECORD_FIELDS)
        walk = (
            f"WITH RECURSIVE lineage (distance, {', '.join(names)}) AS ("
            f"SELECT 0, {carried} FROM {group} WHERE {self.where.format_map(group)}"
            f" UNION ALL SELECT l.distance + 1, {carried} FROM lineage l"
            f" JOIN {group} ON {group['team_id']} = l.{group.column('parent')}"
            f" WHERE l.distance < %s)"
        )
        # An ancestor's own columns are not read (no token, no times to load): NULL.
        select = ", ".join(
            f"l.{column}"
            if name in INHERITED_FIELDS
            else f"CASE WHEN l.distance = 0 THEN l.{column} END"
            for name, column in zip(RECORD_FIELDS, names, strict=True)
        )
        mappings = f"{mapping['schema_id']}, {mapping['data_source_id']}"
        if connection.vendor == "postgresql":
            # PostgreSQL cannot estimate a recursive CTE's rows, and joined the mappings by
            # a hash over the whole table; a LATERAL subquery (OFFSET 0 keeps the planner
            # from flattening it) reads each group's by index: 0.03 ms against 0.10.
            joined = (
                f"LEFT JOIN LATERAL (SELECT {mappings} FROM {mapping}"
                f" WHERE {mapping['group']} = l.{names[0]} OFFSET 0) m ON TRUE"
            )
        else:
            joined = f"LEFT OUTER JOIN {mapping} ON {mapping['group']} = l.{names[0]}"
        sql = (
            f"{walk} SELECT {select}, {mappings}, l.distance FROM lineage l {joined}"
            f" ORDER BY l.distance, {mapping['schema_id']}"
        )
        team_id = group.field("team_id")
        columns = [group.field(name) for name in RECORD_FIELDS]
        columns += [mapping.field("schema_id"), mapping.field("data_source_id"), team_id]
        return Query(sql, columns, [*self._params(group), team_id], shared=len(RECORD_FIELDS))

    def extra_params(self) -> list[Any]:
        return [walk_limit()]


class TreeStatement(Statement):
    """A walk of the group hierarchy with one recursive CTE (``WITH RECURSIVE``: SQLite,
    PostgreSQL and MariaDB all have it), from the groups whose ids are the parameters,
    up to their ancestors or down to their descendants.

    The walk stops after :func:`walk_limit` levels: the services never let a hierarchy
    have a cycle or grow that deep, and a stop keeps a corrupted row from looping.
    Statements are written per number of starting ids, and kept for one id only.
    """

    def __init__(self, direction: str) -> None:
        super().__init__(UserGroup, "", [])
        self.direction = direction

    def build_for(self, connection: BaseDatabaseWrapper, count: int) -> Query:
        group = Table(connection, UserGroup, "g")
        marks = ", ".join(["%s"] * count)
        # ``walk``: (start id, group id, its parent, distance: 1 for the start itself).
        if self.direction == "up":
            step = f"{group['team_id']} = w.parent_id"
        else:
            step = f"{group['parent']} = w.team_id"
        walk = (
            f"WITH RECURSIVE walk (start_id, team_id, parent_id, distance) AS ("
            f"SELECT {group['team_id']}, {group['team_id']}, {group['parent']}, 1"
            f" FROM {group} WHERE {group['team_id']} IN ({marks})"
            f" UNION ALL SELECT w.start_id, {group['team_id']}, {group['parent']},"
            f" w.distance + 1 FROM walk w JOIN {group} ON {step}"
            f" WHERE w.distance < %s)"
        )
        team_id = group.field("team_id")
        params = [team_id] * count + [team_id]
        if self.direction == "down":
            sql = f"{walk} SELECT w.start_id, w.team_id, w.distance FROM walk w"
            sql += " ORDER BY w.start_id, w.distance, w.team_id"
            return Query(sql, [team_id, team_id, team_id], params)
        mapping = Table(connection, SchemaMapping, "m")
        fields = ("provided_id", "properties")
        select = ", ".join(group[name] for name in fields)
        sql = (
            f"{walk} SELECT w.start_id, w.distance, {group['team_id']}, {select},"
            f" {mapping['schema_id']}, {mapping['data_source_id']}"
            f" FROM walk w JOIN {group} ON {group['team_id']} = w.team_id"
            f" LEFT OUTER JOIN {mapping} ON {mapping['group']} = {group['team_id']}"
            f" ORDER BY w.start_id, w.distance DESC, {mapping['schema_id']}"
        )
        columns = [team_id, team_id, team_id, *(group.field(name) for name in fields)]
        columns += [mapping.field("schema_id"), mapping.field("data_source_id")]
        return Query(sql, columns, params)

    def build(self, connection: BaseDatabaseWrapper) -> Query:
        return self.build_for(connection, 1)

    def fetch(self, params: Sequence[Any]) -> tuple[str, list[Row]]:
        """Rows of the walk from the ids ``params``."""
        using = router.db_for_read(self.model)
        connection = connections[using]
        key = (using, connection.vendor)
        prepared = self._prepared.get(key) if len(params) == 1 else None
        if prepared is None:
            prepared = _Prepared.of(self.build_for(connection, len(params)), connection)
            if len(params) == 1:
                self._prepared[key] = prepared
        rows = _fetch_all(connection, prepared, [*params, walk_limit()])
        if prepared.converters and rows:
            rows = [prepared.convert(row, connection) for row in rows]
        return using, rows


def _fetch_all(
    connection: BaseDatabaseWrapper, prepared: "_Prepared", params: list[Any]
) -> list[Row]:
    """The rows of one of the statements here: on SQLite's own cursor where Django's adds
    nothing (:mod:`.direct`), prepared on PostgreSQL (:mod:`.prepared`)."""
    bound = prepared.bind(params)
    if prepared.native and direct.takes(connection):
        return direct.fetch_all(connection, prepared.native, bound)
    return fetch_prepared(connection, prepared.sql, bound)


#: The fewest levels a walk of the hierarchy may go through: beyond any sane
#: ``MAX_HIERARCHY_DEPTH`` (a larger setting raises it).
MAX_WALK = 100


def walk_limit() -> int:
    """How many levels a walk of the hierarchy goes through at most."""
    return max(MAX_WALK, usergroups_settings.MAX_HIERARCHY_DEPTH + 1)


Converter = tuple[int, list[Any], Col]


class _Prepared(NamedTuple):
    sql: str
    converters: list[Converter]
    adapters: list[Any] | None
    shared: int = 0
    #: Parameters by name (SQLite): see :func:`_by_name`.
    named: bool = False
    #: SQLite: the statement as the driver takes it (``:p0``), for :mod:`.direct`.
    native: str = ""

    @classmethod
    def of(cls, query: Query, connection: BaseDatabaseWrapper) -> "_Prepared":
        converters = []
        for index, field in enumerate(query.columns):
            column = field.get_col(field.model._meta.db_table)
            functions = connection.ops.get_db_converters(column) + column.get_db_converters(
                connection
            )
            if functions:
                converters.append((index, functions, column))
        adapters = [_adapter(field, connection) for field in query.params]
        named = connection.vendor == "sqlite"
        sql = _by_name(query.sql) if named else query.sql
        native = sql % {f"p{i}": f":p{i}" for i in range(query.sql.count("%s"))} if named else ""
        return cls(
            sql, converters, adapters if any(adapters) else None, query.shared, named, native
        )

    def bind(self, params: Sequence[Any]) -> Sequence[Any] | dict[str, Any]:
        """``params`` as the statement takes them."""
        return {f"p{i}": value for i, value in enumerate(params)} if self.named else params

    def convert(self, row: Row, connection: BaseDatabaseWrapper) -> Row:
        return self._converted(list(row), self.converters, connection)

    def convert_rows(self, rows: list[Row], connection: BaseDatabaseWrapper) -> list[Row]:
        """Every row converted; a row repeating the row before's first ``shared`` columns
        (the same group) takes them as converted already."""
        if not self.shared:
            return [self.convert(row, connection) for row in rows]
        tail = [converter for converter in self.converters if converter[0] >= self.shared]
        converted: list[Row] = []
        for index, row in enumerate(rows):
            if index and row[0] == rows[index - 1][0]:
                values = [*converted[-1][: self.shared], *row[self.shared :]]
                converted.append(self._converted(values, tail, connection))
            else:
                converted.append(self.convert(row, connection))
        return converted

    @staticmethod
    def _converted(
        values: list[Any], converters: list[Converter], connection: BaseDatabaseWrapper
    ) -> Row:
        for index, functions, column in converters:
            value = values[index]
            for function in functions:
                value = function(value, column, connection)
            values[index] = value
        return tuple(values)


def _by_name(sql: str) -> str:
    """``sql`` with its ``%s`` as ``%(p0)s``, ``%(p1)s``...: Django's SQLite cursor turns
    ``%s`` into ``?`` with a regular expression over the whole statement on every
    execution (30 µs for a lineage statement), named ones with one ``%`` (2 µs)."""
    parts = sql.split("%s")
    return "".join(f"{part}%(p{i})s" for i, part in enumerate(parts[:-1])) + parts[-1]


def _adapter(field: Field, connection: BaseDatabaseWrapper) -> Any:
    """How the ORM turns a value for ``field`` into a parameter, where it is not as is."""
    if isinstance(field, DateTimeField):
        return partial(field.get_db_prep_value, connection=connection)
    return None


# --- The statements ------------------------------------------------------------------------

#: A group by its caller's id, with its ancestors: get-or-create's one query.
GROUP_BY_PROVIDED_ID = LineageStatement(
    "{workspace} = %s AND {provided_id} = %s", ["workspace", "provided_id"]
)
#: The same, locking: reads the winner of a lost insert race even inside a REPEATABLE
#: READ transaction (MySQL, MariaDB), where a plain read may see an older snapshot.
GROUP_BY_PROVIDED_ID_FOR_UPDATE = GroupStatement(
    "{workspace} = %s AND {provided_id} = %s", ["workspace", "provided_id"], for_update=True
)
#: A group by its current token's digest, with its ancestors: the read before a rotation.
GROUP_BY_TOKEN_DIGEST = LineageStatement(
    "{workspace} = %s AND {token_digest} = %s", ["workspace", "token_digest"]
)
#: A group by its internal id, with its ancestors: the read after an update.
GROUP_BY_TEAM_ID = LineageStatement("{team_id} = %s", ["team_id"])
#: The group a token resolves to (its current token, or its previous one until then),
#: with its ancestors.
GROUP_BY_TOKEN = LineageStatement(
    "({token_digest} = %s OR ({previous_token_digest} = %s AND {previous_token_valid_until} > %s))",
    ["token_digest", "previous_token_digest", "previous_token_valid_until"],
)
#: The ancestors of groups, the groups themselves included: ``(start id, distance (1 for
#: the start), team_id, provided_id, properties, schema_id, data_source_id)``, one row per
#: mapping entry, root first: what a child's record inherits.
ANCESTORS = TreeStatement("up")
#: The subtrees of groups: ``(start id, team_id, distance (1 for the start))``.
DESCENDANTS = TreeStatement("down")
#: An API key's whole row by the digest of the whole key, as
#: ``APIKey.objects.get(digest=...)`` loads it (never by its prefix: see keys.find_api_key).
API_KEY_BY_DIGEST = Statement(APIKey, "{digest} = %s", ["digest"])

#: A group's own row by its caller's id, without mappings or ancestors: what a mint
#: needs (its id, name and embed generation), in half a lineage read's time.
GROUP_ROW_BY_PROVIDED_ID = Statement(
    UserGroup, "{workspace} = %s AND {provided_id} = %s", ["workspace", "provided_id"]
)

#: Every statement, for tests/test_sql.py.
STATEMENTS = {
    "GROUP_BY_PROVIDED_ID": GROUP_BY_PROVIDED_ID,
    "GROUP_ROW_BY_PROVIDED_ID": GROUP_ROW_BY_PROVIDED_ID,
    "GROUP_BY_PROVIDED_ID_FOR_UPDATE": GROUP_BY_PROVIDED_ID_FOR_UPDATE,
    "GROUP_BY_TOKEN_DIGEST": GROUP_BY_TOKEN_DIGEST,
    "GROUP_BY_TEAM_ID": GROUP_BY_TEAM_ID,
    "GROUP_BY_TOKEN": GROUP_BY_TOKEN,
    "API_KEY_BY_DIGEST": API_KEY_BY_DIGEST,
    "ANCESTORS": ANCESTORS,
    "DESCENDANTS": DESCENDANTS,
}

"""The API's two hot writes, a group's creation and a token's rotation, as prepared SQL.

Through the ORM, ``Model.save()``, ``bulk_create()`` and ``QuerySet.update()`` build
and compile their SQL on every call: 40% of a create's CPU and as much of a rotation's
in process (bench/RESULTS.md). These statements never change shape, so, like the reads
of :mod:`usergroups.sql`, each is written once per database alias from the models'
metadata, and run on a cursor with its values adapted as the ORM adapts them
(``Field.pre_save`` and ``get_db_prep_save``). tests/test_writes.py holds the rows they
write equal to the ORM's.

On PostgreSQL a group and its mappings are one statement: the group's ``INSERT`` in a
data-modifying ``WITH``, whose ``RETURNING`` the mappings' ``INSERT`` reads. A statement
is atomic by itself, so outside a transaction it needs none of its own: one round trip
where ``BEGIN``, two ``INSERT``\\ s and ``COMMIT`` were four (:func:`needs_transaction`).
Elsewhere (SQLite, MariaDB) they stay two ``INSERT``\\ s in one transaction. A rotation on
PostgreSQL is one statement too, the compare-and-swap ``UPDATE`` returning the group it
rotated (:class:`SwapStatement`); elsewhere a read, then :func:`swap_token`.

``Model.save()`` is not called, so Django's ``pre_save`` and ``post_save`` are sent here
for the group, with the arguments ``save()`` gives them, and what a ``pre_save``
receiver sets on the instance is written. ``bulk_create()`` sent none for the mappings,
and none are sent now. One difference: on PostgreSQL, outside a transaction,
``post_save`` comes just after the commit instead of just before it.
"""

from collections.abc import Iterable
from typing import Any, NamedTuple

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field
from django.db.models.signals import post_save, pre_save

from usergroups.models import SchemaMapping, UserGroup
from usergroups.records import RECORD_FIELDS
from usergroups.sql import GroupStatement, Query, Table

#: The columns of a mapping row, in the order its INSERT writes them.
MAPPING_FIELDS = ("group", "schema_id", "data_source_id")


class _Insert(NamedTuple):
    """A group's INSERT as one database writes it."""

    #: The group's columns, in the order of their ``%s``.
    fields: list[Field]
    #: The group alone (``RETURNING team_id`` on PostgreSQL).
    group: str
    #: PostgreSQL: the group and its mappings (two arrays: schema ids, data source ids).
    with_mapping: str
    #: Elsewhere: the mappings' INSERT up to ``VALUES``, followed by one ``(%s, %s, %s)``
    #: per row.
    mapping_head: str
    #: The mapping's schema id and data source id fields.
    pair_fields: tuple[Field, Field]


def _build_insert(connection: BaseDatabaseWrapper) -> _Insert:
    group = Table(connection, UserGroup, "g")
    mapping = Table(connection, SchemaMapping, "m")
    fields = [f for f in UserGroup._meta.concrete_fields if not f.primary_key]
    columns = ", ".join(group.column(f.name) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    group_table = connection.ops.quote_name(UserGroup._meta.db_table)
    mapping_table = connection.ops.quote_name(SchemaMapping._meta.db_table)
    mapping_columns = ", ".join(mapping.column(name) for name in MAPPING_FIELDS)
    insert = f"INSERT INTO {group_table} ({columns}) VALUES ({marks})"
    team_id = group.column("team_id")
    with_mapping = (
        f"WITH g AS ({insert} RETURNING {team_id})"
        f" INSERT INTO {mapping_table} ({mapping_columns})"
        f" SELECT g.{team_id}, v.schema_id, v.data_source_id FROM g"
        " CROSS JOIN unnest(%s::text[], %s::text[]) AS v (schema_id, data_source_id)"
        f" RETURNING (SELECT {team_id} FROM g)"
    )
    returning = f" RETURNING {team_id}" if _one_statement(connection) else ""
    return _Insert(
        fields,
        insert + returning,
        with_mapping,
        f"INSERT INTO {mapping_table} ({mapping_columns}) VALUES ",
        (mapping.field("schema_id"), mapping.field("data_source_id")),
    )


def _one_statement(connection: BaseDatabaseWrapper) -> bool:
    """Whether the group and its mappings are one statement on ``connection``'s database."""
    return connection.vendor == "postgresql"


_inserts: dict[tuple[str, str], _Insert] = {}


def _insert_for(using: str, connection: BaseDatabaseWrapper) -> _Insert:
    key = (using, connection.vendor)
    insert = _inserts.get(key)
    if insert is None:
        insert = _inserts[key] = _build_insert(connection)
    return insert


def needs_transaction(using: str, mapping: dict[str, str]) -> bool:
    """Whether :func:`insert_group` must run in a transaction of the caller's: when it is
    more than one statement, or when a transaction is open already (then only a
    savepoint keeps a failed insert from aborting the whole of it)."""
    connection = connections[using]
    return connection.in_atomic_block or bool(mapping) and not _one_statement(connection)


def insert_group(group: UserGroup, mapping: dict[str, str], using: str) -> None:
    """Insert ``group`` (unsaved) and its ``mapping`` on the database ``using``, as
    ``group.save(force_insert=True)`` and a ``bulk_create`` of the mappings would:
    ``group.team_id`` is set, ``IntegrityError`` on a duplicate. In a transaction when
    :func:`needs_transaction` says so."""
    connection = connections[using]
    insert = _insert_for(using, connection)
    pre_save.send(UserGroup, instance=group, raw=False, using=using, update_fields=None)
    values = [f.get_db_prep_save(f.pre_save(group, True), connection) for f in insert.fields]
    pairs = _mapping_pairs(mapping, insert.pair_fields, connection)
    with connection.cursor() as cursor:
        if not _one_statement(connection):
            cursor.execute(insert.group, values)
            group.team_id = connection.ops.last_insert_id(
                cursor, UserGroup._meta.db_table, "team_id"
            )
            _insert_mapping(connection, cursor, insert.mapping_head, group.team_id, pairs)
        elif pairs:
            schema_ids, sources = (list(column) for column in zip(*pairs, strict=True))
            cursor.execute(insert.with_mapping, [*values, schema_ids, sources])
            group.team_id = cursor.fetchone()[0]
        else:
            cursor.execute(insert.group, values)
            group.team_id = cursor.fetchone()[0]
    group._state.adding = False
    group._state.db = using
    post_save.send(
        UserGroup, instance=group, created=True, update_fields=None, raw=False, using=using
    )


def _mapping_pairs(
    mapping: dict[str, str], fields: tuple[Field, Field], connection: BaseDatabaseWrapper
) -> list[tuple[Any, Any]]:
    """``(schema id, data source id)`` of each entry, as the fields prepare them for the
    database (host code may pass an integer, which ``bulk_create`` stored as a string)."""
    schema, source = fields
    return [
        (schema.get_db_prep_save(key, connection), source.get_db_prep_save(value, connection))
        for key, value in mapping.items()
    ]


def _insert_mapping(
    connection: BaseDatabaseWrapper,
    cursor: Any,
    head: str,
    team_id: int,
    pairs: list[tuple[Any, Any]],
) -> None:
    """The mapping rows in as few INSERTs as the database's parameter limit allows."""
    rows = [(team_id, schema_id, source) for schema_id, source in pairs]
    fields = [SchemaMapping._meta.get_field(name) for name in MAPPING_FIELDS]
    size = max(connection.ops.bulk_batch_size(fields, rows), 1)
    for start in range(0, len(rows), size):
        batch = rows[start : start + size]
        cursor.execute(head + ", ".join(["(%s, %s, %s)"] * len(batch)), _flat(batch))


def _flat(rows: Iterable[tuple[Any, ...]]) -> list[Any]:
    return [value for row in rows for value in row]


#: The columns a rotation sets from its values (``embed_generation`` it advances by one).
SWAPPED = (
    "embed_tokens_revoked_at",
    "token_digest",
    "token_sealed",
    "token_rotated_at",
    "updated_at",
    "previous_token_digest",
    "previous_token_valid_until",
)

_swaps: dict[tuple[str, str], tuple[str, list[Field]]] = {}


def _build_swap(connection: BaseDatabaseWrapper) -> tuple[str, list[Field]]:
    group = Table(connection, UserGroup, "g")
    generation = group.column("embed_generation")
    assignments = [f"{generation} = {generation} + 1"]
    assignments += [f"{group.column(name)} = %s" for name in SWAPPED]
    sql = (
        f"UPDATE {connection.ops.quote_name(UserGroup._meta.db_table)}"
        f" SET {', '.join(assignments)}"
        f" WHERE {group.column('team_id')} = %s AND {group.column('token_digest')} = %s"
    )
    fields = [group.field(name) for name in (*SWAPPED, "team_id", "token_digest")]
    return sql, fields


def swap_token(using: str, team_id: int, old_digest: str, values: dict[str, Any]) -> bool:
    """A rotation's compare-and-swap: set ``values`` (one for each of :data:`SWAPPED`) and
    advance ``embed_generation`` on the group ``team_id`` if its token's digest is still
    ``old_digest``; whether it was (one UPDATE, as ``QuerySet.update`` would write it)."""
    connection = connections[using]
    key = (using, connection.vendor)
    swap = _swaps.get(key)
    if swap is None:
        swap = _swaps[key] = _build_swap(connection)
    sql, fields = swap
    params = [*(values[name] for name in SWAPPED), team_id, old_digest]
    adapted = [
        f.get_db_prep_save(value, connection) for f, value in zip(fields, params, strict=True)
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, adapted)
        return cursor.rowcount > 0


class SwapStatement(GroupStatement):
    """PostgreSQL: rotation's compare-and-swap and the read of the group it rotated, in
    one statement and one round trip where a read and an UPDATE were two.

    The UPDATE (``SET`` :data:`SWAPPED` from the first parameters, ``embed_generation``
    advanced) finds the group by workspace and current digest and ``RETURNING`` gives its
    row as updated, joined to its mappings: the rows of a
    :class:`~usergroups.sql.GroupStatement`. Concurrent rotations of one token queue on the
    row, and each one after the first finds its digest gone: no row, exactly one winner.
    SQLite cannot put an UPDATE in a WITH and MariaDB has no ``UPDATE ... RETURNING``:
    there a read and :func:`swap_token` do it.
    """

    def __init__(self) -> None:
        where = "{workspace} = %s AND {token_digest} = %s"
        # for_update: run where writes go.
        super().__init__(where, [*SWAPPED, "workspace", "token_digest"], for_update=True)

    def build(self, connection: BaseDatabaseWrapper) -> Query:
        group = Table(connection, UserGroup, "g")
        mapping = Table(connection, SchemaMapping, "m")
        generation = group.column("embed_generation")
        assignments = [f"{generation} = {group['embed_generation']} + 1"]
        assignments += [f"{group.column(name)} = %s" for name in SWAPPED]
        returned = [group.column(name) for name in RECORD_FIELDS]
        sql = (
            f"WITH u AS (UPDATE {group} SET {', '.join(assignments)}"
            f" WHERE {self.where.format_map(group)}"
            f" RETURNING {', '.join(group[name] for name in RECORD_FIELDS)})"
            f" SELECT {', '.join(f'u.{name}' for name in returned)},"
            f" {mapping['schema_id']}, {mapping['data_source_id']} FROM u"
            f" LEFT OUTER JOIN {mapping} ON {mapping['group']} = u.{returned[0]}"
            f" ORDER BY {mapping['schema_id']}"
        )
        columns = [group.field(name) for name in RECORD_FIELDS]
        columns += [mapping.field("schema_id"), mapping.field("data_source_id")]
        return Query(sql, columns, self._params(group))


#: The one statement of a rotation on PostgreSQL.
SWAP_RETURNING = SwapStatement()


def swap_returns_group(using: str) -> bool:
    """Whether a rotation on ``using`` is the one :data:`SWAP_RETURNING` statement."""
    return connections[using].vendor == "postgresql"

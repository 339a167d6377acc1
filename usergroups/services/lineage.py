"""The hierarchy's one walk: a recursive statement (``WITH RECURSIVE``, which SQLite,
PostgreSQL and MariaDB all run) from one group or many, up through their ancestors (a
get, a group token's resolution, an embed token's verification, a list page, a parent's
chain) or down through their descendants (a move, a delete). One query at any depth.

The ORM has no recursive query of its own, and building one with a query builder on
every request cost more than the rest of the request: the statement is written here,
once per database vendor, from the models' metadata, and run by ``Manager.raw()``, so it
goes through Django's cursor and the fields' converters like any other query
(:mod:`usergroups.services.statements`). A group's record is built in one place,
:func:`_record`, from the rows of its walk. A walk stops after :func:`walk_limit`
levels: the services never let a hierarchy hold a cycle or grow that deep, and the stop
keeps a corrupted row from looping.
"""

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Model
from django.db.models.query import RawQuerySet
from django.utils import timezone

from usergroups.conf import usergroups_settings
from usergroups.embed.tokens import Claims
from usergroups.fields import JSONTextField
from usergroups.models import (
    APIKey,
    EndUser,
    RevokedEmbedToken,
    SchemaMapping,
    UserGroup,
    Workspace,
)
from usergroups.records import Ancestor, GroupRecord
from usergroups.services import statements

#: The fewest levels a walk goes through: beyond any sane ``MAX_HIERARCHY_DEPTH`` (a
#: larger setting raises it).
MAX_WALK = 100

#: One group of a walk: its row, and its mapping's ``(schema id, data source id)`` pairs.
Level = tuple[UserGroup, list[tuple[str, str]]]


def walk_limit() -> int:
    """How many levels a walk goes through at most."""
    return max(MAX_WALK, usergroups_settings.MAX_HIERARCHY_DEPTH + 1)


class Start(NamedTuple):
    """Where :func:`find_group`'s walk starts: a ``WHERE`` on the group's table naming
    fields in braces (``"{workspace_id} = %s"``), and the field each ``%s`` stands for,
    whose values are prepared as the ORM prepares that field's."""

    where: str
    fields: tuple[str, ...]


#: The starts of the app's reads of one group, each on a unique index.
BY_PROVIDED_ID = Start(
    "{workspace_id} = %s AND {provided_id} = %s", ("workspace_id", "provided_id")
)
BY_TOKEN_DIGEST = Start(
    "{workspace_id} = %s AND {token_digest} = %s", ("workspace_id", "token_digest")
)
BY_TEAM_ID = Start("{team_id} = %s", ("team_id",))
#: A group token: the current one, or the previous one until its grace period ends.
BY_TOKEN = Start(
    "({token_digest} = %s OR ({previous_token_digest} = %s AND {previous_token_valid_until} > %s))",
    ("token_digest", "previous_token_digest", "previous_token_valid_until"),
)


def _walk_sql(
    connection: BaseDatabaseWrapper, where: str, *, up: bool = True, columns: str = ""
) -> str:
    """The walk from the groups ``where`` finds (a condition on their row ``g``), up to
    their ancestors or down to their descendants: every row of each group it reaches,
    with the group the walk started from (``walk_start``), its distance from it
    (``walk_distance``) and its mapping's entries (a row each, ``walk_schema_id`` and
    ``walk_data_source_id``; NULLs for none). ``columns``: what else the caller reads in
    the same query, added to every row (``", (SELECT ...) AS name"``)."""
    group, mapping = UserGroup, SchemaMapping

    def column(name: str, model: type[Model] = group) -> str:
        return statements.column(connection, model, name)

    team_id, parent_id = column("team_id"), column("parent_id")
    table = statements.table(connection, group)
    step = f"g.{team_id} = w.parent_id" if up else f"g.{parent_id} = w.team_id"
    return (
        f"WITH RECURSIVE walk (start_id, team_id, parent_id, distance) AS ("
        f"SELECT g.{team_id}, g.{team_id}, g.{parent_id}, 0 FROM {table} g WHERE {where}"
        f" UNION ALL SELECT w.start_id, g.{team_id}, g.{parent_id}, w.distance + 1 FROM walk w"
        f" JOIN {table} g ON {step} WHERE w.distance < %s)"
        f" SELECT g.*, w.start_id AS walk_start, w.distance AS walk_distance,"
        f" m.{column('schema_id', mapping)} AS walk_schema_id,"
        f" m.{column('data_source_id', mapping)} AS walk_data_source_id{columns}"
        f" FROM walk w JOIN {table} g ON g.{team_id} = w.team_id"
        f" LEFT OUTER JOIN {statements.table(connection, mapping)} m"
        f" ON m.{column('group', mapping)} = g.{team_id}"
        f" ORDER BY w.start_id, w.distance"
    )


def _walks(rows: Iterable[UserGroup]) -> dict[int, list[Level]]:
    """The rows of a walk by the group it started from: its levels, nearest first."""
    walks: dict[int, dict[int, Level]] = {}
    for row in rows:
        walked: Any = row  # the model's row, with the walk's columns as attributes
        levels = walks.setdefault(walked.walk_start, {})
        _group, pairs = levels.setdefault(walked.walk_distance, (row, []))
        if walked.walk_schema_id is not None:
            pairs.append((walked.walk_schema_id, walked.walk_data_source_id))
    return {start: [levels[d] for d in sorted(levels)] for start, levels in walks.items()}


def _lineage(levels: Sequence[Level]) -> list[Level] | None:
    """An upward walk's levels root first, if its chain of parents reaches a root (None
    for a corrupted hierarchy, cut by the walk's limit)."""
    parent_id = levels[0][0].parent_id
    for above, _pairs in levels[1:]:
        if above.team_id != parent_id:
            return None
        parent_id = above.parent_id
    return None if parent_id is not None else list(reversed(levels))


def _ancestor(level: Level) -> Ancestor:
    group, pairs = level
    return Ancestor(group.team_id, group.provided_id, group.properties, dict(pairs))


def _record(levels: Sequence[Level]) -> GroupRecord | None:
    """The record of the group an upward walk's ``levels`` started from: the one place
    a group's record is assembled from what it inherits."""
    chain = _lineage(levels)
    if chain is None:
        return None
    own, mapping = chain[-1]
    return record_of(own, mapping, [_ancestor(level) for level in chain[:-1]])


def record_of(
    group: UserGroup, mapping: Iterable[tuple[str, str]], ancestors: Sequence[Ancestor]
) -> GroupRecord:
    """The record of ``group``, read or written by the caller with its ``mapping`` pairs
    and its ``ancestors`` (root first)."""
    return GroupRecord.from_model(group, mapping, ancestors)


def record_with_parent(group: UserGroup, mapping: Iterable[tuple[str, str]]) -> GroupRecord:
    """:func:`record_of` ``group`` under its parent's walk: one query when it has a
    parent, none otherwise. ``ValueError`` if its parent is gone."""
    chain: list[Ancestor] = []
    if group.parent_id is not None:
        chain = ancestors_of([group.parent_id]).get(group.parent_id, [])
        if not chain:
            raise ValueError(f"The parent of user group {group.pk} is gone.")
    return record_of(group, mapping, chain)


# The annotation is a string: RawQuerySet is not subscriptable at run time.
def _run(sql: str, params: Sequence[Any], using: str | None = None) -> "RawQuerySet[UserGroup]":
    return UserGroup.objects.using(using or router.db_for_read(UserGroup)).raw(sql, params)


def find_group(start: Start, *values: Any, using: str | None = None) -> GroupRecord | None:
    """The group ``start`` finds with ``values`` (a unique one) with what it inherits, in
    one query; None when there is none, or when its chain of parents does not reach a
    root (a corrupted hierarchy, cut by the walk's limit). ``using``: the alias to read
    (default: the router's for reading)."""
    using = using or router.db_for_read(UserGroup)
    connection = connections[using]
    params = [
        statements.prepared(connection, UserGroup, name, value)
        for name, value in zip(start.fields, values, strict=True)
    ]
    sql = statements.written_once(connection, start, lambda: _start_sql(connection, start))
    walks = _walks(_run(sql, [*params, walk_limit()], using))
    return next((_record(levels) for levels in walks.values()), None)


def _start_sql(connection: BaseDatabaseWrapper, start: Start) -> str:
    where = start.where.format_map(
        {name: f"g.{statements.column(connection, UserGroup, name)}" for name in start.fields}
    )
    return _walk_sql(connection, where)


def _many_sql(connection: BaseDatabaseWrapper, count: int, *, up: bool) -> str:
    team_id = statements.column(connection, UserGroup, "team_id")
    return _walk_sql(connection, f"g.{team_id} IN ({', '.join(['%s'] * count)})", up=up)


def find_groups(team_ids: Iterable[int]) -> dict[int, GroupRecord]:
    """The groups of ``team_ids`` with what they inherit, by id: one query for any
    number of ids, none for no ids (a group gone or cut is left out)."""
    ids = sorted(set(team_ids))
    if not ids:
        return {}
    connection = connections[router.db_for_read(UserGroup)]
    walks = _walks(_run(_many_sql(connection, len(ids), up=True), [*ids, walk_limit()]))
    records = {start: _record(levels) for start, levels in walks.items()}
    return {start: record for start, record in records.items() if record is not None}


def _token_sql(connection: BaseDatabaseWrapper, with_key: bool, with_end_user: bool) -> str:
    """:func:`find_token_group`'s statement: the walk starts only from a group that
    every binding of the token still holds."""

    def column(model: type[Model], name: str) -> str:
        return statements.column(connection, model, name)

    def on_group(model: type[Model], alias: str) -> str:
        return f"{alias}.{column(model, 'workspace')} = g.{column(UserGroup, 'workspace')}"

    key = (
        f"FROM {statements.table(connection, APIKey)} k"
        f" WHERE k.{column(APIKey, 'public_id')} = %s AND {on_group(APIKey, 'k')}"
        f" AND k.{column(APIKey, 'revoked_at')} IS NULL AND k.{column(APIKey, 'scope_embed')} = %s"
        f" AND (k.{column(APIKey, 'expires_at')} IS NULL OR k.{column(APIKey, 'expires_at')} > %s)"
    )
    conditions = [
        *(f"g.{column(UserGroup, name)} = %s" for name in _TOKEN_GROUP_FIELDS),
        f"EXISTS (SELECT 1 FROM {statements.table(connection, Workspace)} ws"
        f" WHERE ws.{column(Workspace, 'id')} = g.{column(UserGroup, 'workspace')}"
        f" AND ws.{column(Workspace, 'embed_generation')} = %s)",
        f"NOT EXISTS (SELECT 1 FROM {statements.table(connection, RevokedEmbedToken)} d"
        f" WHERE d.{column(RevokedEmbedToken, 'jti')} = %s)",
    ]
    columns = ""
    if with_key:
        conditions.append(f"EXISTS (SELECT 1 {key})")
        # When the key expires its tokens end (CONTRACT 8a): what remembers a grant
        # must know when, as nothing is written then.
        columns += (
            f", (SELECT k.{column(APIKey, 'expires_at')} {key} AND w.distance = 0)"
            " AS token_key_expires_at"
        )
    if with_end_user:
        # The person's attributes on the group's own row (distance 0), NULL unless every
        # binding of the person holds. A subquery in the select list, not a condition of
        # the walk: PostgreSQL plans it faster, and planning costs more than running.
        person = " AND ".join(f"u.{column(EndUser, name)} = %s" for name in _TOKEN_END_USER_FIELDS)
        columns += (
            f", (SELECT u.{column(EndUser, 'attributes')}"
            f" FROM {statements.table(connection, EndUser)} u"
            f" WHERE w.distance = 0 AND {on_group(EndUser, 'u')} AND {person})"
            " AS token_end_user_attributes"
        )
    return _walk_sql(connection, " AND ".join(conditions), columns=columns)


_TOKEN_GROUP_FIELDS = (
    "team_id",
    "workspace_id",
    "provided_id",
    "embed_binding",
    "embed_generation",
)
_TOKEN_END_USER_FIELDS = ("end_user_id", "embed_binding", "embed_generation", "disabled")


def _utc(value: Any) -> datetime | None:
    """A datetime column read outside a model field (SQLite gives text, MariaDB a naive
    UTC time) as an aware datetime."""
    if value is None:
        return None
    found = statements.field(APIKey, "expires_at").to_python(value)
    assert isinstance(found, datetime)
    return timezone.make_aware(found, UTC) if timezone.is_naive(found) else found


class TokenGroup(NamedTuple):
    """What :func:`find_token_group` finds for a token that still holds."""

    group: GroupRecord
    #: The token's end user's attributes; None for a token without one.
    end_user_attributes: dict[str, Any] | None
    #: When the key that minted the token expires (None: never, or no key).
    key_expires_at: datetime | None


def find_token_group(claims: Claims, using: str | None = None) -> TokenGroup | None:
    """The group of verified ``claims`` with what it inherits, and its end user's
    attributes, if everything the token is bound to still holds: the group (its id,
    workspace, binding and generation), the workspace's generation, the key that minted
    it (not revoked, expired or deleted, still holding ``embed``), the denylist, and the
    end user (its binding and generation, not disabled, not deleted). One indexed query,
    which finds nothing when any of them fails (for the end user: no attributes).
    ``using``: the alias to read (default: the router's for reading).
    """
    using = using or router.db_for_read(UserGroup)
    connection = connections[using]
    bound, person = claims.binding, claims.binding.end_user
    group_values = (
        claims.team_id,
        bound.workspace_id,
        claims.user_group_id,
        bound.group_binding,
        bound.group_generation,
    )
    params = [
        *(
            statements.prepared(connection, UserGroup, name, value)
            for name, value in zip(_TOKEN_GROUP_FIELDS, group_values, strict=True)
        ),
        statements.prepared(connection, Workspace, "embed_generation", bound.workspace_generation),
        statements.prepared(connection, RevokedEmbedToken, "jti", claims.jti),
    ]
    key_params = []
    if bound.key_id is not None:
        key_params = [
            statements.prepared(connection, APIKey, "public_id", bound.key_id),
            statements.prepared(connection, APIKey, "scope_embed", True),
            statements.prepared(connection, APIKey, "expires_at", timezone.now()),
        ]
    params += [*key_params, walk_limit(), *key_params]
    if person is not None:
        person_values = (person.end_user_id, person.binding, person.generation, False)
        params.extend(
            statements.prepared(connection, EndUser, name, value)
            for name, value in zip(_TOKEN_END_USER_FIELDS, person_values, strict=True)
        )
    with_key, with_end_user = bound.key_id is not None, person is not None
    sql = statements.written_once(
        connection,
        ("token", with_key, with_end_user),
        lambda: _token_sql(connection, with_key, with_end_user),
    )
    levels = next(iter(_walks(UserGroup.objects.using(using).raw(sql, params)).values()), [])
    record = _record(levels) if levels else None
    if record is None:
        return None
    own: Any = levels[0][0]  # the group's own row, with the statement's columns
    key_expires_at = _utc(getattr(own, "token_key_expires_at", None))
    if person is None:
        return TokenGroup(record, None, key_expires_at)
    text = getattr(own, "token_end_user_attributes", None)
    if text is None:  # the person is gone, disabled, or their tokens revoked
        return None
    attributes_field = statements.field(EndUser, "attributes")
    assert isinstance(attributes_field, JSONTextField)
    attributes = attributes_field.from_db_value(text, None, connection)
    return TokenGroup(record, attributes if isinstance(attributes, dict) else {}, key_expires_at)


def ancestors_of(team_ids: Iterable[int]) -> dict[int, list[Ancestor]]:
    """Each of ``team_ids`` with its ancestors, root first (the group itself is last):
    one query for any number of ids, none for no ids."""
    ids = sorted(set(team_ids))
    if not ids:
        return {}
    connection = connections[router.db_for_read(UserGroup)]
    walks = _walks(_run(_many_sql(connection, len(ids), up=True), [*ids, walk_limit()]))
    chains: dict[int, list[Ancestor]] = {team_id: [] for team_id in ids}
    for start, levels in walks.items():
        # As walked, cut or not: a corrupted chain is as long as the walk's limit, which
        # the hierarchy's depth rule refuses as a parent.
        chains[start] = [_ancestor(level) for level in reversed(levels)]
    return chains


def subtree(team_id: int) -> list[tuple[int, int]]:
    """``(team_id, level below the group: 1 for the group itself)`` of the group and
    every descendant, the group first: one query."""
    connection = connections[router.db_for_read(UserGroup)]
    rows: Iterable[Any] = _run(_many_sql(connection, 1, up=False), [team_id, walk_limit()])
    found = {row.team_id: row.walk_distance + 1 for row in rows}  # a row per mapping entry
    return sorted(found.items(), key=lambda item: (item[1], item[0]))

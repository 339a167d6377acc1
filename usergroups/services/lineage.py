"""The hierarchy's recursive walks: a group with its ancestors (for a get, a group token's
resolution, an embed token's verification), the ancestors of many groups (a list page),
the descendants of a group (a move, a delete). Each is one query at any depth.

The ORM has no recursive query of its own; these are recursive CTEs (``WITH RECURSIVE``,
which SQLite, PostgreSQL and MariaDB all run). The walks of many groups are django-cte
querysets; the hot reads of one group (:func:`find_group`, and :func:`find_token_group`,
which also checks everything an embed token is bound to and reads its end user) are
statements of :mod:`usergroups.services.statements`. A walk stops after
:func:`walk_limit` levels: the services never let a hierarchy hold a cycle or grow that
deep, and the stop keeps a corrupted row from looping.
"""

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, NamedTuple

from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import F, IntegerField, Model, QuerySet, Value
from django.db.models.lookups import LessThan
from django.utils import timezone
from django_cte import CTE, with_cte

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

_MAPPING = ("mappings__schema_id", "mappings__data_source_id")
#: One group of a walk: its values (the fields asked for) and its mapping's pairs.
Level = tuple[tuple[Any, ...], list[tuple[str, str]]]
#: What an ancestor gives a child's record.
_INHERITED = ("team_id", "provided_id", "properties", "parent_id")


def walk_limit() -> int:
    """How many levels a walk goes through at most."""
    return max(MAX_WALK, usergroups_settings.MAX_HIERARCHY_DEPTH + 1)


def _walk(start: QuerySet[UserGroup], *, up: bool) -> CTE:
    """``(team_id, start_id, distance)`` of each group of ``start`` (distance 0) and of
    each group above it (``up``: its parent at 1, ...) or below it (its children at 1)."""

    def make(cte: CTE) -> QuerySet[Any]:
        step = {"team_id": cte.col.parent_id} if up else {"parent_id": cte.col.team_id}
        first = start.order_by().values(
            "team_id",
            "parent_id",
            start_id=F("team_id"),
            distance=Value(0, output_field=IntegerField()),
        )
        following = (
            cte.join(UserGroup, **step)
            .filter(LessThan(cte.col.distance, walk_limit()))
            .order_by()
            .values(
                "team_id",
                "parent_id",
                start_id=cte.col.start_id,
                distance=cte.col.distance + Value(1, output_field=IntegerField()),
            )
        )
        # Unordered: Django 6.1 orders a union by the model's Meta.ordering, which its
        # values() columns cannot hold.
        return first.union(following, all=True).order_by()

    return CTE.recursive(make, name="lineage")


def _rows(start: QuerySet[UserGroup], fields: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """``(start_id, distance, *fields, schema_id, data_source_id)`` of the groups of
    ``start`` and their ancestors, a row per mapping entry (one of NULLs for none)."""
    walk = _walk(start, up=True)
    groups = (
        walk.join(UserGroup, team_id=walk.col.team_id)
        .annotate(walk_start=walk.col.start_id, walk_distance=walk.col.distance)
        .order_by()
    )
    selected = with_cte(walk, select=groups)
    return list(selected.values_list("walk_start", "walk_distance", *fields, *_MAPPING))


def _levels(rows: Iterable[tuple[Any, ...]]) -> dict[int, dict[int, Level]]:
    """``{start id: {distance: level}}`` of :func:`_rows`' ``rows``."""
    walks: dict[int, dict[int, Level]] = {}
    for start_id, distance, *values, schema_id, source in rows:
        level = walks.setdefault(start_id, {}).setdefault(distance, (tuple(values), []))
        if schema_id is not None:
            level[1].append((schema_id, source))
    return walks


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


def _lineage_sql(connection: BaseDatabaseWrapper, where: str, columns: str = "") -> str:
    """The walk up from the group ``where`` finds (a condition on its row ``g``), with
    every row of the group and its ancestors, their mappings and their distance from the
    group: the ORM cannot say a recursive query, and building django-cte's on every
    request cost more than the rest of the request, so this one statement is written
    once per database vendor. ``columns``: what else its caller reads in the same query,
    added to every row (``", (SELECT ...) AS name"``)."""
    group, mapping = UserGroup, SchemaMapping

    def column(name: str, model: type[Model] = group) -> str:
        return statements.column(connection, model, name)

    team_id, parent_id = column("team_id"), column("parent_id")
    table = statements.table(connection, group)
    return (
        f"WITH RECURSIVE walk (team_id, parent_id, distance) AS ("
        f"SELECT g.{team_id}, g.{parent_id}, 0 FROM {table} g WHERE {where}"
        f" UNION ALL SELECT g.{team_id}, g.{parent_id}, w.distance + 1 FROM walk w"
        f" JOIN {table} g ON g.{team_id} = w.parent_id WHERE w.distance < %s)"
        f" SELECT g.*, w.distance AS walk_distance,"
        f" m.{column('schema_id', mapping)} AS walk_schema_id,"
        f" m.{column('data_source_id', mapping)} AS walk_data_source_id{columns}"
        f" FROM walk w JOIN {table} g ON g.{team_id} = w.team_id"
        f" LEFT OUTER JOIN {statements.table(connection, mapping)} m"
        f" ON m.{column('group', mapping)} = g.{team_id}"
        f" ORDER BY w.distance"
    )


def _start_sql(connection: BaseDatabaseWrapper, start: Start) -> str:
    where = start.where.format_map(
        {name: f"g.{statements.column(connection, UserGroup, name)}" for name in start.fields}
    )
    return _lineage_sql(connection, where)


def _record(rows: Iterable[UserGroup]) -> tuple[GroupRecord, UserGroup] | None:
    """The record of a walk's ``rows`` and the group's own row; None for no rows, or for
    a chain of parents that does not reach a root (a corrupted hierarchy, cut by the
    walk's limit)."""
    levels: dict[int, tuple[UserGroup, list[tuple[str, str]]]] = {}
    for row in rows:
        walked: Any = row  # the model's row, with the walk's columns as attributes
        _group, pairs = levels.setdefault(walked.walk_distance, (row, []))
        if walked.walk_schema_id is not None:
            pairs.append((walked.walk_schema_id, walked.walk_data_source_id))
    if not levels:
        return None
    own, mapping = levels[0]
    chain: list[Ancestor] = []
    parent_id = own.parent_id
    for distance in range(1, len(levels)):
        above, pairs = levels[distance]
        if above.team_id != parent_id:
            return None
        chain.append(Ancestor(above.team_id, above.provided_id, above.properties, dict(pairs)))
        parent_id = above.parent_id
    if parent_id is not None:
        return None
    chain.reverse()
    return GroupRecord.from_model(own, mapping, chain), own


def find_group(start: Start, *values: Any) -> GroupRecord | None:
    """The group ``start`` finds with ``values`` (a unique one) with what it inherits, in
    one query; None when there is none, or when its chain of parents does not reach a
    root (a corrupted hierarchy, cut by the walk's limit)."""
    using = router.db_for_read(UserGroup)
    connection = connections[using]
    params = [
        statements.prepared(connection, UserGroup, name, value)
        for name, value in zip(start.fields, values, strict=True)
    ]
    sql = statements.written_once(connection, start, lambda: _start_sql(connection, start))
    found = _record(UserGroup.objects.using(using).raw(sql, [*params, walk_limit()]))
    return None if found is None else found[0]


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
    return _lineage_sql(connection, " AND ".join(conditions), columns)


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


def find_token_group(claims: Claims) -> TokenGroup | None:
    """The group of verified ``claims`` with what it inherits, and its end user's
    attributes, if everything the token is bound to still holds: the group (its id,
    workspace, binding and generation), the workspace's generation, the key that minted
    it (not revoked, expired or deleted, still holding ``embed``), the denylist, and the
    end user (its binding and generation, not disabled, not deleted). One indexed query,
    which finds nothing when any of them fails (for the end user: no attributes).
    """
    using = router.db_for_read(UserGroup)
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
    found = _record(UserGroup.objects.using(using).raw(sql, params))
    if found is None:
        return None
    record, own = found
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
    walks = _levels(_rows(UserGroup.objects.filter(pk__in=ids), _INHERITED))
    chains: dict[int, list[Ancestor]] = {team_id: [] for team_id in ids}
    for start_id, levels in walks.items():
        chains[start_id] = [
            Ancestor(team_id, provided_id, properties, dict(pairs))
            for (team_id, provided_id, properties, _parent), pairs in (
                levels[distance] for distance in sorted(levels, reverse=True)
            )
        ]
    return chains


def subtree(team_id: int) -> list[tuple[int, int]]:
    """``(team_id, level below the group: 1 for the group itself)`` of the group and
    every descendant, the group first: one query."""
    walk = _walk(UserGroup.objects.filter(pk=team_id), up=False)
    rows = with_cte(walk, select=walk.queryset()).order_by("distance", "team_id")
    return [
        (group_id, distance + 1) for group_id, distance in rows.values_list("team_id", "distance")
    ]

"""The hierarchy's recursive walks: a group with its ancestors (for a get, a group token's
resolution, an embed token's verification), the ancestors of many groups (a list page),
the descendants of a group (a move, a delete). Each is one query at any depth.

The ORM has no recursive query of its own; these are recursive CTEs (``WITH RECURSIVE``,
which SQLite, PostgreSQL and MariaDB all run) built on querysets with django-cte, so they
go through Django's cursor and converters like any other query. A walk stops after
:func:`walk_limit` levels: the services never let a hierarchy hold a cycle or grow that
deep, and the stop keeps a corrupted row from looping.
"""

from collections.abc import Iterable
from typing import Any

from django.db.models import F, IntegerField, Q, QuerySet, Value
from django.db.models.lookups import LessThan
from django_cte import CTE, with_cte

from usergroups.conf import usergroups_settings
from usergroups.models import UserGroup
from usergroups.records import RECORD_FIELDS, Ancestor, GroupRecord

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


def find_group(condition: Q) -> GroupRecord | None:
    """The group matching ``condition`` (a unique one: by id, provided id or token) with
    what it inherits, in one query; None when there is none, or when its chain of parents
    does not reach a root (a corrupted hierarchy, cut by the walk's limit)."""
    walks = _levels(_rows(UserGroup.objects.filter(condition), RECORD_FIELDS))
    if not walks:
        return None
    # One start (the conditions name unique columns); the lowest id, should two match.
    levels = walks[min(walks)]
    values, mapping = levels[0]
    chain: list[Ancestor] = []
    parent_id = dict(zip(RECORD_FIELDS, values, strict=True))["parent_id"]
    for distance in range(1, len(levels)):
        above = dict(zip(RECORD_FIELDS, levels[distance][0], strict=True))
        if above["team_id"] != parent_id:
            return None
        pairs = dict(levels[distance][1])
        chain.append(Ancestor(above["team_id"], above["provided_id"], above["properties"], pairs))
        parent_id = above["parent_id"]
    if parent_id is not None:
        return None
    chain.reverse()
    return GroupRecord.from_values(values, mapping, chain)


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

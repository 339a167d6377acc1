"""Every hand-written statement of ``usergroups.sql`` gives the rows the ORM gives for the
same question, on the database under test (run on SQLite, PostgreSQL and MariaDB)."""

from contextlib import nullcontext
from dataclasses import dataclass
from datetime import timedelta
from functools import partial

import pytest
from django.db import connection, transaction
from django.db.models import Model, Q
from django.utils import timezone

from tests.support.factories import APIKeyFactory, SchemaMappingFactory, UserGroupFactory
from usergroups import crypto, sql
from usergroups.models import APIKey, UserGroup
from usergroups.records import INHERITED_FIELDS, RECORD_FIELDS, GroupRecord

# Schema ids whose code point order differs from a dictionary's (case, accents, "_").
SCHEMA_IDS = ["zeta", "Alpha", "alpha", "ä", "_x", "B", "mid"]


@dataclass
class Data:
    workspace_id: int
    other_workspace_id: int
    mapped: UserGroup
    bare: UserGroup
    in_grace: UserGroup
    grace_over: UserGroup
    namesake: UserGroup  # the mapped group's provided_id, in the other workspace
    in_grace_old: str
    grace_over_old: str
    key: APIKey
    child: UserGroup  # of mapped, with a mapping entry of its own
    grandchild: UserGroup  # of child, without mappings


@pytest.fixture
def data(workspace, other_workspace):
    mapped = UserGroupFactory(
        workspace=workspace,
        provided_id="Acme ✓",
        properties={"nested": {"list": [1, 2.5, None, True, "ü"]}, "n": 0},
    )
    for number, schema_id in enumerate(SCHEMA_IDS):
        SchemaMappingFactory(group=mapped, schema_id=schema_id, data_source_id=f"db-{number}")
    bare = UserGroupFactory(workspace=workspace, provided_id="acme ✓", properties=None)
    in_grace = UserGroupFactory(workspace=workspace)
    grace_over = UserGroupFactory(workspace=workspace)
    SchemaMappingFactory(group=in_grace, schema_id="sales", data_source_id="eu")
    child = UserGroupFactory(workspace=workspace, parent=mapped, properties={"n": 1})
    SchemaMappingFactory(group=child, schema_id="zeta", data_source_id="child-db")
    namesake = UserGroupFactory(workspace=other_workspace, provided_id=mapped.provided_id)
    SchemaMappingFactory(group=namesake, schema_id="sales", data_source_id="other")
    olds = {}
    for group, valid_for in ((in_grace, 60), (grace_over, -60)):
        olds[group.pk] = crypto.new_group_token()
        UserGroup.objects.filter(pk=group.pk).update(
            previous_token_digest=crypto.digest(olds[group.pk]),
            previous_token_valid_until=timezone.now() + timedelta(seconds=valid_for),
            token_rotated_at=timezone.now(),
        )
    return Data(
        workspace_id=workspace.pk,
        other_workspace_id=other_workspace.pk,
        mapped=mapped,
        bare=bare,
        in_grace=in_grace,
        grace_over=grace_over,
        namesake=namesake,
        in_grace_old=olds[in_grace.pk],
        grace_over_old=olds[grace_over.pk],
        key=APIKeyFactory(workspace=workspace),
        child=child,
        grandchild=UserGroupFactory(workspace=workspace, parent=child, properties=None),
    )


def orm_groups(condition: Q) -> list[tuple]:
    """The ORM's rows for the groups matching ``condition``, as the group statements
    lay them out: the record's columns, then each mapping entry (NULLs for none)."""
    groups = UserGroup.objects.filter(condition).order_by("team_id", "mappings__schema_id")
    return list(
        groups.values_list(*RECORD_FIELDS, "mappings__schema_id", "mappings__data_source_id")
    )


def orm_lineage(condition: Q) -> list[tuple]:
    """The ORM's rows for the group matching ``condition`` (at most one) and its
    ancestors, as the lineage statements lay them out: each group's rows as in
    :func:`orm_groups`, then its distance from the group (0 for itself)."""
    rows = []
    group = UserGroup.objects.filter(condition).first()
    distance = 0
    while group is not None:
        rows += [(*inherited(row, distance), distance) for row in orm_groups(Q(pk=group.pk))]
        group, distance = group.parent, distance + 1
    return rows


def inherited(row: tuple, distance: int) -> tuple:
    """A group statement's row as a lineage statement lays out an ancestor's (distance
    over 0): only INHERITED_FIELDS and the mapping entry, the other columns NULL."""
    if distance == 0:
        return row
    kept = {RECORD_FIELDS.index(name) for name in INHERITED_FIELDS}
    return tuple(
        value if index in kept or index >= len(RECORD_FIELDS) else None
        for index, value in enumerate(row)
    )


def orm_rows(model: type[Model], condition: Q) -> list[tuple]:
    """The ORM's rows of ``model`` matching ``condition``: every column, in field order."""
    fields = [field.attname for field in model._meta.concrete_fields]
    return list(model.objects.filter(condition).values_list(*fields))


orm_keys = partial(orm_rows, APIKey)


def by_provided_id(d: Data, orm=orm_lineage) -> list[tuple[list, list]]:
    asked = [
        (d.workspace_id, d.grandchild.provided_id),
        (d.workspace_id, d.child.provided_id),
        (d.workspace_id, d.mapped.provided_id),
        (d.workspace_id, d.bare.provided_id),  # differs from the first by case only
        (d.other_workspace_id, d.mapped.provided_id),
        (d.workspace_id, d.mapped.provided_id + " "),
        (d.workspace_id, "nobody"),
    ]
    return [
        (
            [workspace_id, provided_id],
            orm(Q(workspace_id=workspace_id, provided_id=provided_id)),
        )
        for workspace_id, provided_id in asked
    ]


def by_token_digest(d: Data) -> list[tuple[list, list]]:
    asked = [
        (d.workspace_id, d.mapped.token_digest),
        (d.workspace_id, d.in_grace.token_digest),
        (d.workspace_id, d.grandchild.token_digest),
        (d.other_workspace_id, d.mapped.token_digest),  # another workspace's group
        (d.workspace_id, crypto.digest(d.in_grace_old)),  # a previous token: not current
    ]
    return [
        ([workspace_id, digest], orm_lineage(Q(workspace_id=workspace_id, token_digest=digest)))
        for workspace_id, digest in asked
    ]


def by_team_id(d: Data) -> list[tuple[list, list]]:
    asked = [d.mapped.pk, d.bare.pk, d.namesake.pk, d.child.pk, d.grandchild.pk, 987654321]
    return [([team_id], orm_lineage(Q(pk=team_id))) for team_id in asked]


def by_token(d: Data) -> list[tuple[list, list]]:
    now = timezone.now()
    digests = [
        d.mapped.token_digest,
        crypto.digest(d.in_grace_old),  # resolves during the grace period
        crypto.digest(d.grace_over_old),  # no longer
        d.grace_over.token_digest,
        d.child.token_digest,
        crypto.digest(crypto.new_group_token()),
    ]
    return [
        (
            [digest, digest, now],
            orm_lineage(
                Q(token_digest=digest)
                | Q(previous_token_digest=digest, previous_token_valid_until__gt=now)
            ),
        )
        for digest in digests
    ]


def api_key_by_digest(d: Data) -> list[tuple[list, list]]:
    digest = d.key.digest
    asked = [digest, digest.upper(), digest[:-1], digest + " ", "0" * 64]
    return [([value], orm_keys(Q(digest=value))) for value in asked]


def orm_chain(team_id: int) -> list[tuple[int, int]]:
    """``(team_id, distance)`` of the group and its ancestors, the group first (1)."""
    chain = []
    group = UserGroup.objects.filter(pk=team_id).first()
    while group is not None:
        chain.append((group.pk, len(chain) + 1))
        group = group.parent
    return chain


def ancestors(d: Data) -> list[tuple[list, list]]:
    asked = [
        [d.grandchild.pk],
        [d.child.pk],
        [d.mapped.pk],
        [d.grandchild.pk, d.bare.pk, d.child.pk],
        [987654321],
    ]
    answers = []
    for ids in asked:
        rows = []
        for start in sorted(ids):
            for team_id, distance in reversed(orm_chain(start)):
                group = UserGroup.objects.get(pk=team_id)
                head = (start, distance, team_id, group.provided_id, group.properties)
                pairs = group.mappings.order_by("schema_id").values_list(
                    "schema_id", "data_source_id"
                )
                rows += [head + pair for pair in pairs] or [(*head, None, None)]
        answers.append((ids, rows))
    return answers


def descendants(d: Data) -> list[tuple[list, list]]:
    asked = [[d.mapped.pk], [d.child.pk], [d.grandchild.pk], [d.mapped.pk, d.bare.pk], [987654]]
    answers = []
    for ids in asked:
        rows = []
        for start in sorted(ids):
            level, distance = UserGroup.objects.filter(pk=start), 1
            while level:
                rows += [(start, pk, distance) for pk in sorted(g.pk for g in level)]
                level, distance = UserGroup.objects.filter(parent__in=level), distance + 1
        answers.append((ids, rows))
    return answers


QUESTIONS = {
    "GROUP_BY_PROVIDED_ID": by_provided_id,
    "GROUP_BY_PROVIDED_ID_FOR_UPDATE": partial(by_provided_id, orm=orm_groups),
    "GROUP_ROW_BY_PROVIDED_ID": partial(by_provided_id, orm=partial(orm_rows, UserGroup)),
    "GROUP_BY_TOKEN_DIGEST": by_token_digest,
    "GROUP_BY_TEAM_ID": by_team_id,
    "GROUP_BY_TOKEN": by_token,
    "API_KEY_BY_DIGEST": api_key_by_digest,
    "ANCESTORS": ancestors,
    "DESCENDANTS": descendants,
}


def test_every_statement_is_compared_with_the_orm():
    assert set(QUESTIONS) == set(sql.STATEMENTS)


@pytest.mark.parametrize(
    "outside",
    # Outside a transaction, as requests read: prepared on PostgreSQL (usergroups.prepared).
    [False, pytest.param(True, marks=pytest.mark.django_db(transaction=True))],
    ids=["in-a-transaction", "outside"],
)
@pytest.mark.parametrize("name", sorted(QUESTIONS))
def test_statement_gives_the_orms_rows(data, name, outside):
    statement = sql.STATEMENTS[name]
    found = []
    for params, expected in QUESTIONS[name](data):
        # A locking statement runs inside one, as it is used.
        with nullcontext() if outside and not statement.for_update else transaction.atomic():
            rows = statement.fetch(params)[1]
        assert rows == expected, (name, params)
        found.append(bool(rows))
    assert any(found) and not all(found)  # the questions find rows, and also nothing


@pytest.mark.parametrize("name", sorted(QUESTIONS))
def test_statement_locks_only_where_it_says_it_does(name):
    statement = sql.STATEMENTS[name]
    locks = "FOR UPDATE" in statement.build(connection).sql
    assert locks == (statement.for_update and connection.features.has_select_for_update)


def test_group_rows_make_the_record_the_orm_gives(data):
    rows = sql.GROUP_BY_PROVIDED_ID_FOR_UPDATE.fetch([data.workspace_id, data.mapped.provided_id])[
        1
    ]
    record = GroupRecord.from_rows(rows)
    stored = UserGroup.objects.get(pk=data.mapped.pk)
    assert record == GroupRecord.from_model(
        stored, stored.mappings.values_list("schema_id", "data_source_id")
    )
    # One order for every record: by schema id, in code point order, whatever the database.
    assert list(record.mapping) == sorted(SCHEMA_IDS)

"""The hierarchy's recursive walks (usergroups.services.lineage) give what the ORM gives
for the same question, walking one parent at a time, on the database under test (run on
SQLite, PostgreSQL and MariaDB)."""

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.db.models import Q
from django.utils import timezone

from tests.support.factories import SchemaMappingFactory, UserGroupFactory
from usergroups import crypto
from usergroups.models import UserGroup
from usergroups.records import Ancestor, GroupRecord
from usergroups.services import groups, lineage

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
        child=child,
        grandchild=UserGroupFactory(workspace=workspace, parent=child, properties=None),
    )


def orm_ancestors(group: UserGroup) -> list[Ancestor]:
    """The group and its ancestors, root first, one parent at a time."""
    chain = []
    while group is not None:
        pairs = group.mappings.values_list("schema_id", "data_source_id")
        chain.append(Ancestor(group.pk, group.provided_id, group.properties, dict(pairs)))
        group = group.parent
    return chain[::-1]


def orm_record(condition: Q) -> GroupRecord | None:
    """The ORM's record of the one group matching ``condition``, or None."""
    group = UserGroup.objects.filter(condition).first()
    if group is None:
        return None
    pairs = group.mappings.values_list("schema_id", "data_source_id")
    return GroupRecord.from_model(group, pairs, orm_ancestors(group)[:-1])


#: A read of one group: where the walk starts, its values, and the ORM's filter for it.
Question = tuple[lineage.Start, tuple[Any, ...], Q]


def by_provided_id(d: Data) -> list[Question]:
    asked = [
        (d.workspace_id, d.grandchild.provided_id),
        (d.workspace_id, d.child.provided_id),
        (d.workspace_id, d.mapped.provided_id),
        (d.workspace_id, d.bare.provided_id),  # differs from the third by case only
        (d.other_workspace_id, d.mapped.provided_id),
        (d.workspace_id, d.mapped.provided_id + " "),
        (d.workspace_id, "nobody"),
    ]
    return [
        (
            lineage.BY_PROVIDED_ID,
            (workspace, provided_id),
            Q(workspace_id=workspace, provided_id=provided_id),
        )
        for workspace, provided_id in asked
    ]


def by_token_digest(d: Data) -> list[Question]:
    asked = [
        (d.workspace_id, d.mapped.token_digest),
        (d.workspace_id, d.in_grace.token_digest),
        (d.workspace_id, d.grandchild.token_digest),
        (d.other_workspace_id, d.mapped.token_digest),  # another workspace's group
        (d.workspace_id, crypto.digest(d.in_grace_old)),  # a previous token: not current
    ]
    return [
        (
            lineage.BY_TOKEN_DIGEST,
            (workspace, digest),
            Q(workspace_id=workspace, token_digest=digest),
        )
        for workspace, digest in asked
    ]


def by_team_id(d: Data) -> list[Question]:
    asked = [d.mapped.pk, d.bare.pk, d.namesake.pk, d.child.pk, d.grandchild.pk, 987654321]
    return [(lineage.BY_TEAM_ID, (team_id,), Q(pk=team_id)) for team_id in asked]


def by_token(d: Data) -> list[Question]:
    """As a group token resolves (usergroups.auth.group_token)."""
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
            lineage.BY_TOKEN,
            (digest, digest, now),
            Q(token_digest=digest)
            | Q(previous_token_digest=digest, previous_token_valid_until__gt=now),
        )
        for digest in digests
    ]


QUESTIONS = {
    "provided-id": by_provided_id,
    "token-digest": by_token_digest,
    "team-id": by_team_id,
    "token": by_token,
}


@pytest.mark.parametrize(
    "outside",
    # Outside a transaction, as requests read.
    [False, pytest.param(True, marks=pytest.mark.django_db(transaction=True))],
    ids=["in-a-transaction", "outside"],
)
@pytest.mark.parametrize("question", sorted(QUESTIONS))
def test_a_group_with_its_ancestors_is_the_orms_record(data, question, outside):
    found = []
    for start, values, condition in QUESTIONS[question](data):
        record = lineage.find_group(start, *values)
        assert record == orm_record(condition), (question, condition)
        found.append(record is not None)
    assert any(found) and not all(found)  # the questions find groups, and also nothing


def test_a_record_s_mapping_is_in_code_point_order(data):
    """One order for every record, whatever the database's collation."""
    record = lineage.find_group(lineage.BY_TEAM_ID, data.mapped.pk)
    assert record is not None and list(record.mapping) == sorted(SCHEMA_IDS)
    child = lineage.find_group(lineage.BY_TEAM_ID, data.child.pk)
    assert child is not None and list(child.computed_mapping) == sorted(SCHEMA_IDS)


def test_the_locking_read_of_a_lost_race_gives_the_same_record(data, monkeypatch):
    """A get-or-create that loses the insert race reads the winner with a locking read
    (no recursive walk: a CTE's rows cannot be locked), then its ancestors."""
    monkeypatch.setattr(groups, "find_group", lambda workspace_id, provided_id: None)
    for group in (data.mapped, data.bare, data.grandchild):
        record, created = groups.get_or_create_group(data.workspace_id, group.provided_id)
        assert not created
        assert (
            record == lineage.find_group(lineage.BY_TEAM_ID, group.pk) == orm_record(Q(pk=group.pk))
        )


@pytest.mark.parametrize(
    "starts",
    [["grandchild"], ["child"], ["mapped"], ["grandchild", "bare", "child"], []],
)
def test_ancestors_of_groups_are_the_orms(data, starts):
    ids = [getattr(data, name).pk for name in starts]
    assert lineage.ancestors_of(ids) == {
        team_id: orm_ancestors(UserGroup.objects.get(pk=team_id)) for team_id in ids
    }
    assert lineage.ancestors_of([987654321]) == {987654321: []}


@pytest.mark.parametrize("start", ["mapped", "child", "grandchild", "bare"])
def test_a_subtree_is_the_orms(data, start):
    team_id = getattr(data, start).pk
    expected, level, depth = [], UserGroup.objects.filter(pk=team_id), 1
    while level:
        expected += [(pk, depth) for pk in sorted(g.pk for g in level)]
        level, depth = UserGroup.objects.filter(parent__in=level), depth + 1
    assert lineage.subtree(team_id) == expected
    assert lineage.subtree(987654321) == []


def test_a_chain_that_does_not_reach_a_root_is_no_group(data):
    """A corrupted hierarchy (a cycle written past the services) ends at the walk's limit."""
    UserGroup.objects.filter(pk=data.mapped.pk).update(parent=data.grandchild.pk)
    assert lineage.find_group(lineage.BY_TEAM_ID, data.child.pk) is None
    assert len(lineage.ancestors_of([data.child.pk])[data.child.pk]) == lineage.walk_limit() + 1

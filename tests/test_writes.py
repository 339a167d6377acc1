"""usergroups.writes: the prepared INSERT of a group and its mappings, and rotation's
compare-and-swap, write what the ORM would, and send the signals ``save()`` sends."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.db.models.signals import post_save, pre_save
from django.forms.models import model_to_dict
from django.utils import timezone

from usergroups import crypto, sql, writes
from usergroups.models import SchemaMapping, UserGroup
from usergroups.records import RECORD_FIELDS

pytestmark = pytest.mark.django_db

MAPPING = {"sales": "ds-1", "hr": "ds-2", "Ops": "ds-3"}
UNSAVED = ("team_id", "provided_id", "created_at", "updated_at")


def unsaved(workspace, provided_id, **fields):
    group = UserGroup(
        workspace=workspace,
        provided_id=provided_id,
        name="Acme",
        properties={"plan": "pro", "seats": 3},
        **fields,
    )
    group.set_token(crypto.new_group_token())
    return group


def stored(team_id):
    """The group's columns as the ORM reads them back (what may differ left out)."""
    group = UserGroup.objects.get(pk=team_id)
    values = model_to_dict(group, exclude=["token_digest", "token_sealed"])
    values.update(token=group.token)
    for name in UNSAVED:
        values.pop(name, None)
    return values


def test_a_group_inserted_is_the_group_save_writes(workspace):
    orm = unsaved(workspace, "by-save")
    token = orm.token
    orm.save(force_insert=True)
    SchemaMapping.objects.bulk_create(
        SchemaMapping(group=orm, schema_id=s, data_source_id=d) for s, d in MAPPING.items()
    )
    prepared = unsaved(workspace, "by-writes")
    prepared_token = prepared.token
    writes.insert_group(prepared, MAPPING, connection.alias)

    assert prepared.team_id is not None and prepared.team_id != orm.team_id
    assert prepared._state.adding is False and prepared._state.db == connection.alias
    assert {**stored(prepared.team_id), "token": token} == {**stored(orm.team_id)}
    assert stored(prepared.team_id)["token"] == prepared_token
    row = UserGroup.objects.get(pk=prepared.team_id)
    assert row.updated_at == prepared.updated_at and row.created_at == prepared.created_at
    mappings = SchemaMapping.objects.filter(group=prepared).values_list(
        "schema_id", "data_source_id"
    )
    assert dict(mappings) == MAPPING


def test_a_group_without_mappings(workspace):
    group = unsaved(workspace, "alone")
    writes.insert_group(group, {}, connection.alias)
    assert UserGroup.objects.get(pk=group.team_id).provided_id == "alone"
    assert not SchemaMapping.objects.exists()


def test_an_integer_in_a_mapping_is_stored_as_its_string(workspace):
    """As bulk_create stored it: host code may pass one (the API takes it as a string)."""
    group = unsaved(workspace, "numbers")
    writes.insert_group(group, {"sales": 1001, "hr": "ds-2"}, connection.alias)
    stored_mapping = SchemaMapping.objects.filter(group=group)
    pairs = dict(stored_mapping.values_list("schema_id", "data_source_id"))
    assert pairs == {"sales": "1001", "hr": "ds-2"}


def test_more_mappings_than_one_statement_takes(workspace):
    mapping = {f"schema-{n:04}": f"source-{n}" for n in range(1000)}  # MAX_MAPPING_ENTRIES
    group = unsaved(workspace, "wide")
    writes.insert_group(group, mapping, connection.alias)
    stored_mapping = SchemaMapping.objects.filter(group=group)
    assert dict(stored_mapping.values_list("schema_id", "data_source_id")) == mapping


def test_save_signals_are_sent_as_save_sends_them(workspace):
    received = []

    def before(sender, instance, **kwargs):
        received.append(("pre_save", instance.team_id, kwargs))
        instance.name = "Renamed by a receiver"  # written, as with save()

    def after(sender, instance, **kwargs):
        received.append(("post_save", instance.team_id, kwargs))

    pre_save.connect(before, sender=UserGroup)
    post_save.connect(after, sender=UserGroup)
    try:
        group = unsaved(workspace, "signalled")
        writes.insert_group(group, MAPPING, connection.alias)
    finally:
        pre_save.disconnect(before, sender=UserGroup)
        post_save.disconnect(after, sender=UserGroup)
    common = {"signal": pre_save, "raw": False, "using": connection.alias, "update_fields": None}
    assert received == [
        ("pre_save", None, common),
        ("post_save", group.team_id, {**common, "signal": post_save, "created": True}),
    ]
    assert UserGroup.objects.get(pk=group.team_id).name == "Renamed by a receiver"


def test_a_duplicate_is_an_integrity_error_that_leaves_the_transaction_usable(workspace):
    writes.insert_group(unsaved(workspace, "taken"), MAPPING, connection.alias)
    with pytest.raises(IntegrityError), transaction.atomic():
        writes.insert_group(unsaved(workspace, "taken"), MAPPING, connection.alias)
    assert UserGroup.objects.filter(provided_id="taken").count() == 1
    assert SchemaMapping.objects.count() == len(MAPPING)


def test_the_swap_is_the_update_the_orm_made(group):
    now = timezone.now()
    new = crypto.new_group_token()
    digest = crypto.digest(new)
    values = {
        "embed_tokens_revoked_at": now,
        "token_digest": digest,
        "token_sealed": crypto.seal_token(new, digest),
        "token_rotated_at": now,
        "updated_at": now,
        "previous_token_digest": group.token_digest,
        "previous_token_valid_until": now + timedelta(seconds=30),
    }
    twin = UserGroup.objects.get(pk=group.pk)
    assert writes.swap_token(connection.alias, group.pk, group.token_digest, values)
    swapped = UserGroup.objects.filter(pk=group.pk).values(*values, "embed_generation").get()
    # The same update through the ORM, on a copy of the row, reads back the same.
    twin.pk = None
    twin.provided_id, twin.token_digest = "twin", crypto.digest(crypto.new_group_token())
    twin.save(force_insert=True)
    UserGroup.objects.filter(pk=twin.pk).update(
        embed_generation=F("embed_generation") + 1, **values | {"token_digest": "t" * 64}
    )
    orm = UserGroup.objects.filter(pk=twin.pk).values(*values, "embed_generation").get()
    assert swapped == {**orm, "token_digest": digest}
    assert swapped["embed_generation"] == group.embed_generation + 1


def test_the_swap_loses_when_the_digest_moved_on(group):
    now = timezone.now()
    values = dict.fromkeys(writes.SWAPPED, None) | {
        "token_digest": "d" * 64,
        "token_sealed": "s",
        "updated_at": now,
    }
    assert not writes.swap_token(connection.alias, group.pk, "0" * 64, values)
    assert UserGroup.objects.get(pk=group.pk).token_digest == group.token_digest


needs_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="one statement on PostgreSQL only"
)


def swap_params(group):
    now = timezone.now()
    new = crypto.new_group_token()
    values = dict.fromkeys(writes.SWAPPED, None) | {
        "token_digest": crypto.digest(new),
        "token_sealed": crypto.seal_token(new, crypto.digest(new)),
        "token_rotated_at": now,
        "updated_at": now,
        "embed_tokens_revoked_at": now,
    }
    return [*(values[name] for name in writes.SWAPPED), group.workspace_id, group.token_digest]


@needs_postgresql
def test_the_swap_statement_gives_the_rows_a_read_after_the_swap_gives(group):
    for schema_id, source in MAPPING.items():
        SchemaMapping.objects.create(group=group, schema_id=schema_id, data_source_id=source)
    rows = writes.SWAP_RETURNING.fetch(swap_params(group))[1]
    read = sql.GROUP_BY_PROVIDED_ID_FOR_UPDATE.fetch([group.workspace_id, group.provided_id])[1]
    assert rows == read and len(rows) == len(MAPPING)
    assert rows[0][RECORD_FIELDS.index("embed_generation")] == group.embed_generation + 1


@needs_postgresql
def test_the_swap_statement_finds_nothing_once_the_digest_moved_on(group):
    params = swap_params(group)
    assert writes.SWAP_RETURNING.fetch(params)[1]
    assert writes.SWAP_RETURNING.fetch(swap_params(group))[1] == []  # the old digest again
    other = swap_params(group)
    other[-2] += 1  # another workspace
    assert writes.SWAP_RETURNING.fetch(other)[1] == []

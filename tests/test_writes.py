"""A group's creation and a token's rotation write through the ORM: ``save()`` sends its
signals (a receiver's change is written), ``bulk_create`` stores the mapping, a duplicate
leaves the caller's transaction usable, and the rotation's compare-and-swap loses once
the digest moved on."""

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models.signals import post_save, pre_save

from usergroups.models import SchemaMapping, UserGroup
from usergroups.services import groups

pytestmark = pytest.mark.django_db

MAPPING = {"sales": "ds-1", "hr": "ds-2", "Ops": "ds-3"}


def create(workspace, provided_id, mapping=MAPPING):
    return groups.create_group(workspace.pk, provided_id, "Acme", mapping, {"plan": "pro"})


def test_an_integer_in_a_mapping_is_stored_as_its_string(workspace):
    """As bulk_create stores it: host code may pass one (the API takes it as a string)."""
    record = create(workspace, "numbers", {"sales": 1001, "hr": "ds-2"})
    stored_mapping = SchemaMapping.objects.filter(group_id=record.team_id)
    pairs = dict(stored_mapping.values_list("schema_id", "data_source_id"))
    assert pairs == {"sales": "1001", "hr": "ds-2"}


def test_more_mappings_than_one_statement_takes(workspace):
    mapping = {f"schema-{n:04}": f"source-{n}" for n in range(1000)}  # MAX_MAPPING_ENTRIES
    record = create(workspace, "wide", mapping)
    stored_mapping = SchemaMapping.objects.filter(group_id=record.team_id)
    assert dict(stored_mapping.values_list("schema_id", "data_source_id")) == mapping
    assert record.mapping == dict(sorted(mapping.items()))


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
        record = create(workspace, "signalled")
    finally:
        pre_save.disconnect(before, sender=UserGroup)
        post_save.disconnect(after, sender=UserGroup)
    common = {"signal": pre_save, "raw": False, "using": connection.alias, "update_fields": None}
    assert received == [
        ("pre_save", None, common),
        ("post_save", record.team_id, {**common, "signal": post_save, "created": True}),
    ]
    assert UserGroup.objects.get(pk=record.team_id).name == "Renamed by a receiver"


def test_a_duplicate_is_an_integrity_error_that_leaves_the_transaction_usable(workspace):
    create(workspace, "taken")
    with transaction.atomic():
        with pytest.raises(IntegrityError):
            create(workspace, "taken")
        assert UserGroup.objects.filter(provided_id="taken").count() == 1
    assert SchemaMapping.objects.count() == len(MAPPING)


def test_the_swap_loses_when_the_digest_moved_on(workspace):
    record = create(workspace, "rotated")
    rotated = groups.rotate_group_token(record)
    assert rotated is not None and rotated.token_digest != record.token_digest
    assert rotated.embed_generation == record.embed_generation + 1
    assert groups.rotate_group_token(record) is None  # the old digest again
    stored = UserGroup.objects.get(pk=record.team_id)
    assert (stored.token_digest, stored.embed_generation) == (
        rotated.token_digest,
        rotated.embed_generation,
    )

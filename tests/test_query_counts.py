"""How many queries each operation costs, and that creation writes in one transaction.

The API key was used a moment ago in every test here (``recently_used_key``), so its
``last_used_at`` is not written and authenticating costs exactly one query.
"""

import re

import pytest
from django.db import DatabaseError, IntegrityError, connection
from django.test import override_settings

from tests.support.api import get_or_create, rotate
from tests.support.factories import SchemaMappingFactory
from tests.support.queries import READS, WRITES, statements, verb
from tests.support.read_model import until_trusted
from tests.support.webhook_receiver import running_receiver
from usergroups import crypto, read_model
from usergroups.models import SchemaMapping, UserGroup, Webhook, WebhookDelivery
from usergroups.services import audit
from usergroups.webhooks import deliveries, registry

MAPPING = {"sales": "pg-1", "hr": "pg-2", "ops": "pg-3"}


pytestmark = pytest.mark.usefixtures("recently_used_key")


@pytest.fixture
def mapped_group(group):
    for schema_id, source in MAPPING.items():
        SchemaMappingFactory(group=group, schema_id=schema_id, data_source_id=source)
    return group


def test_getting_an_existing_group_costs_two_queries_and_writes_nothing(
    api_client, mapped_group, django_assert_max_num_queries
):
    with django_assert_max_num_queries(2) as queries:
        response = get_or_create(api_client, {"user_group_id": mapped_group.provided_id})
    body = response.json()
    assert body["new_user_group"] is False
    assert body["user_group"]["mapping"] == MAPPING
    assert body["user_group"]["token"] == mapped_group.token
    assert statements(queries.captured_queries, WRITES) == []
    assert statements(queries.captured_queries, ("SAVEPOINT", "BEGIN")) == []


def test_existing_group_without_mappings_costs_the_same(
    api_client, group, django_assert_max_num_queries
):
    with django_assert_max_num_queries(2) as queries:
        body = get_or_create(api_client, {"user_group_id": group.provided_id}).json()
    assert body["user_group"]["mapping"] == {}
    assert statements(queries.captured_queries, WRITES) == []


def test_rotation_costs_at_most_five_queries_and_two_writes(
    api_client, mapped_group, django_assert_max_num_queries
):
    # The key, the group's read, the swap (PostgreSQL too since 0.3: the ORM's UPDATE
    # returns no row, so the one-statement swap-and-read of 0.2 is gone), its audit event
    # and the webhooks that may receive it (the outbox's SELECT).
    with django_assert_max_num_queries(5) as queries:
        response = rotate(api_client, {"current_token": mapped_group.token})
    assert response.status_code == 200
    update, insert = statements(queries.captured_queries, WRITES)
    assert verb(update).startswith("UPDATE")
    assert verb(insert).startswith("INSERT") and "usergroups_auditevent" in insert


def test_creation_with_three_mappings_costs_at_most_eight_queries(
    api_client, django_assert_max_num_queries
):
    # Inside the test's transaction: a savepoint and its release around the inserts; the
    # webhooks that may receive the event (the outbox's SELECT).
    with django_assert_max_num_queries(8) as queries:
        response = get_or_create(api_client, {"user_group_id": "acme", "mapping": MAPPING})
    assert response.json()["new_user_group"] is True
    inserts = statements(queries.captured_queries, ("INSERT",))
    # The group (save()), then its mappings in one statement (bulk_create), its event.
    assert len(inserts) == 3
    assert "usergroups_auditevent" in inserts[-1]
    assert SchemaMapping.objects.count() == 3


@pytest.mark.django_db(transaction=True)
def test_creation_outside_a_transaction_costs_eight_queries_or_nine_listening(
    api_client, django_assert_num_queries
):
    """As a server runs it (no transaction open, the read model listening where it is
    on): the key, the miss, then BEGIN, the three INSERTs (group, mappings, audit event),
    the webhooks that may receive the event, and COMMIT (PostgreSQL too since 0.3: its
    one-statement INSERT of a group and its mappings was hand-written SQL, which the ORM
    cannot say). Where the read model listens (PostgreSQL), one more, no commit: the
    transaction's id, which its notifications carry, read as it opens, so that the answer
    waits until this process has heard this write."""
    listening = read_model.enabled()
    if listening:
        assert until_trusted()
    with django_assert_num_queries(9 if listening else 8) as queries:
        response = get_or_create(api_client, {"user_group_id": "acme", "mapping": MAPPING})
    assert response.json()["new_user_group"] is True
    opened = statements(queries.captured_queries, ("SAVEPOINT", "BEGIN"))
    assert len(opened) == 1
    assert len(statements(queries.captured_queries, ("SELECT PG_CURRENT_XACT_ID",))) == listening
    assert UserGroup.objects.get(provided_id="acme").mappings.count() == 3


def test_creation_cost_does_not_grow_with_the_mapping(api_client, django_assert_max_num_queries):
    mapping = {f"schema-{n}": f"source-{n}" for n in range(50)}
    with django_assert_max_num_queries(8):
        response = get_or_create(api_client, {"user_group_id": "acme", "mapping": mapping})
    assert response.json()["user_group"]["mapping"] == mapping


@pytest.mark.parametrize(
    "body",
    [b"not json", b'{"user_group_id": ""}', b'{"user_group_id": "a", "mapping": {"a": ""}}'],
    ids=["parse-error", "invalid-id", "invalid-mapping"],
)
def test_rejected_input_costs_only_the_key_lookup(api_client, body, django_assert_num_queries):
    with django_assert_num_queries(1):
        assert get_or_create(api_client, body).status_code == 400


def test_malformed_key_costs_no_query(anon_api_client, db, django_assert_num_queries):
    anon_api_client.credentials(HTTP_AUTHORIZATION="Token ugk_malformed")
    with django_assert_num_queries(0):
        assert get_or_create(anon_api_client, {"user_group_id": "a"}).status_code == 401


def test_unknown_token_costs_two_queries(api_client, django_assert_num_queries):
    with django_assert_num_queries(2):
        assert rotate(api_client, {"current_token": crypto.new_group_token()}).status_code == 404


@pytest.mark.parametrize("error", [DatabaseError, IntegrityError])
def test_a_failing_mapping_insert_leaves_no_group(api_client, error):
    """The group and its mappings are written all or nothing, in one transaction. The
    database refuses the statement that inserts mappings."""
    table = SchemaMapping._meta.db_table

    def fail_mapping_inserts(execute, sql, params, many, context):
        if f"INSERT INTO {connection.ops.quote_name(table)}" in sql:
            raise error("simulated constraint violation")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(fail_mapping_inserts), pytest.raises(error, match="simulated"):
        get_or_create(api_client, {"user_group_id": "acme", "mapping": MAPPING})
    assert not UserGroup.objects.filter(provided_id="acme").exists()
    assert not SchemaMapping.objects.exists()
    # And the id is free: the next call creates it whole.
    response = get_or_create(api_client, {"user_group_id": "acme", "mapping": MAPPING})
    assert response.json()["new_user_group"] is True
    assert UserGroup.objects.get(provided_id="acme").mappings.count() == 3


@override_settings(USERGROUPS={"WEBHOOK_ALLOW_PRIVATE": True})
def test_a_webhook_delivery_attempt_costs_one_read_and_four_updates(
    workspace, django_assert_max_num_queries
):
    with running_receiver() as receiver:
        webhook, _ = registry.create_webhook(workspace.pk, receiver.url, ["user_group"])
        event = audit.record(workspace.pk, audit.USER_GROUP_CREATED)
        delivery_id = WebhookDelivery.objects.get(event=event).delivery_id
        # The delivery with its webhook and event; the webhook held, the delivery claimed,
        # then recorded, the webhook let go (each UPDATE in a savepoint here).
        with django_assert_max_num_queries(13) as queries:
            attempted = deliveries.attempt(delivery_id, first=True)
        assert attempted.outcome is not None and attempted.outcome.status == 204
        assert len(statements(queries.captured_queries, READS)) == 1
        updates = statements(queries.captured_queries, ("UPDATE",))
        tables = [re.match(r"UPDATE [`\"]?(\w+)", sql).group(1) for sql in updates]
        webhook_table, delivery_table = Webhook._meta.db_table, WebhookDelivery._meta.db_table
        assert tables == [webhook_table, delivery_table, delivery_table, webhook_table]
        # A failing webhook's first turn goes behind the others: the delivery's read, and
        # its due time moved (in a savepoint here).
        Webhook.objects.filter(pk=webhook.pk).update(failing=True)
        event = audit.record(workspace.pk, audit.USER_GROUP_CREATED)
        delivery_id = WebhookDelivery.objects.get(event=event).delivery_id
        with django_assert_max_num_queries(4) as queries:
            assert deliveries.attempt(delivery_id, first=True).behind
        assert len(statements(queries.captured_queries, READS)) == 1
        (moved,) = statements(queries.captured_queries, ("UPDATE",))
        assert re.match(r"UPDATE [`\"]?(\w+)", moved).group(1) == delivery_table

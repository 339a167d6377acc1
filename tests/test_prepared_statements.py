"""The app's fixed statements prepared on the server (usergroups.prepared): on PostgreSQL
they are planned once per connection under names that are digests of their text, the
setting turns it off, and a server connection that lacks them (as behind a pooler in
transaction mode) prepares them and answers."""

import re

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext, override_settings

from tests.support.api import get_or_create
from usergroups import prepared, sql
from usergroups.models import UserGroup
from usergroups.records import RECORD_FIELDS

# Outside a transaction, as a request is served: inside one, reads run unprepared.
pytestmark = pytest.mark.django_db(transaction=True)

postgres_only = pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="prepares only on PostgreSQL (psycopg 3)"
)


def statements_on_server() -> dict[str, str]:
    """``{name: PREPARE text}`` of what this session's server connection has prepared."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT name, statement FROM pg_prepared_statements")
        return dict(cursor.fetchall())


def forget_on_server() -> None:
    """What a pooler does: the server connection lent now lacks the statements this
    client prepared on another (sent below psycopg, so the client is not told)."""
    connection.ensure_connection()
    connection.connection.pgconn.exec_(b"DEALLOCATE ALL")


def lineage_of(team_id: int) -> list[tuple]:
    return sql.GROUP_BY_TEAM_ID.fetch([team_id])[1]


@postgres_only
def test_a_get_prepares_the_key_and_group_statements_under_their_digests(api_client):
    assert get_or_create(api_client, {"user_group_id": "g"}).status_code == 200
    on_server = statements_on_server()
    assert any("usergroups_apikey" in text for text in on_server.values())
    assert any(" AS WITH RECURSIVE lineage" in text for text in on_server.values())
    for name, text in on_server.items():
        statement = re.sub(r"\$\d+", "%s", text.split(" AS ", 1)[1])
        assert name == prepared.statement_name(statement)
        # Placeholders, never a value (no key digest on the server).
        assert "$1" in text


@postgres_only
def test_names_differ_by_statement_and_hold_across_connections(group):
    lineage_of(group.team_id)
    sql.GROUP_BY_PROVIDED_ID.fetch([group.workspace_id, group.provided_id])
    before = statements_on_server()
    assert len(before) == 2
    connection.close()
    lineage_of(group.team_id)
    sql.GROUP_BY_PROVIDED_ID.fetch([group.workspace_id, group.provided_id])
    assert statements_on_server() == before  # another client would use the same names


@postgres_only
def test_a_prepared_statement_answers_as_the_unprepared_one(group):
    prepared_rows = lineage_of(group.team_id)
    with override_settings(USERGROUPS={"PREPARED_STATEMENTS": False}):
        assert lineage_of(group.team_id) == prepared_rows
    assert prepared_rows and prepared_rows[0][0] == group.team_id


@postgres_only
def test_the_setting_turns_preparing_off(api_client):
    with override_settings(USERGROUPS={"PREPARED_STATEMENTS": False}):
        assert get_or_create(api_client, {"user_group_id": "g"}).status_code == 200
    assert statements_on_server() == {}


@postgres_only
def test_prepared_statements_are_in_the_query_log(group):
    with CaptureQueriesContext(connection) as captured:
        sql.GROUP_BY_PROVIDED_ID.fetch([group.workspace_id, group.provided_id])
    assert len(captured) == 1
    assert captured[0]["sql"].startswith("WITH RECURSIVE lineage")
    assert f"'{group.provided_id}'" in captured[0]["sql"]  # with its values, as Django logs


@postgres_only
def test_a_server_connection_without_the_statement_prepares_it_and_answers(group):
    expected = lineage_of(group.team_id)
    forget_on_server()
    with CaptureQueriesContext(connection) as captured:
        assert lineage_of(group.team_id) == expected
    assert len(captured) == 1  # the read, logged once
    assert len(statements_on_server()) == 1  # prepared again, on this server connection


@postgres_only
def test_a_statement_another_client_prepared_is_run_as_it_is(group):
    expected = lineage_of(group.team_id)
    # This client no longer believes it prepared it; the server connection has it (as
    # when a pooler lends one that another client prepared it on).
    connection.connection._usergroups_cursor.prepared.clear()
    assert lineage_of(group.team_id) == expected
    assert len(statements_on_server()) == 1


@postgres_only
def test_a_request_after_a_lost_statement_is_answered(api_client):
    assert get_or_create(api_client, {"user_group_id": "g"}).status_code == 200
    forget_on_server()
    answer = get_or_create(api_client, {"user_group_id": "g"})
    assert answer.status_code == 200
    assert answer.json()["new_user_group"] is False


@postgres_only
def test_reads_inside_a_transaction_run_unprepared(group):
    expected = lineage_of(group.team_id)
    forget_on_server()
    with transaction.atomic():
        # An EXECUTE the server connection cannot answer would abort the transaction.
        assert lineage_of(group.team_id) == expected
        assert statements_on_server() == {}
    assert lineage_of(group.team_id) == expected
    assert len(statements_on_server()) == 1


@pytest.mark.skipif("connection.vendor == 'postgresql'", reason="the other databases")
def test_nothing_is_prepared_on_other_databases(group):
    assert not prepared.preparing(connection)
    assert lineage_of(group.team_id)[0][0] == group.team_id


@postgres_only
def test_one_preparing_cursor_per_connection_and_djangos_timestamps(group):
    row = lineage_of(group.team_id)[0]
    kept = connection.connection._usergroups_cursor
    lineage_of(group.team_id)
    assert connection.connection._usergroups_cursor is kept and not kept.closed
    created_at = row[RECORD_FIELDS.index("created_at")]
    stored = UserGroup.objects.values_list("created_at", flat=True).get(pk=group.pk)
    assert created_at == stored and created_at.tzinfo is stored.tzinfo  # aware, in UTC


@postgres_only
def test_a_pooled_connection_prepares_each_statement_once(group, monkeypatch):
    """Django's psycopg pool lends its connections in turn: each keeps what it prepared."""
    settings = {**connection.settings_dict, "CONN_MAX_AGE": 0}
    settings["OPTIONS"] = {**settings["OPTIONS"], "pool": {"min_size": 2, "max_size": 2}}
    pooled = type(connections[connection.alias])(settings, alias="pooled")
    prepares = []
    real_prepare = prepared._PreparedCursor._prepare
    monkeypatch.setattr(
        prepared._PreparedCursor,
        "_prepare",
        lambda cursor, name, text: (
            prepares.append(id(cursor.connection)) or real_prepare(cursor, name, text)
        ),
    )
    statement = sql.GROUP_BY_TEAM_ID.build(pooled).sql
    lent = set()
    try:
        for _ in range(6):  # a request each: a connection from the pool, given back after
            rows = prepared.fetch_all(pooled, statement, [group.team_id, sql.walk_limit()])
            assert rows[0][0] == group.team_id
            lent.add(id(pooled.connection))
            pooled.close()
    finally:
        pooled.close_pool()
    assert len(lent) == 2  # both connections served
    assert sorted(prepares) == sorted(lent)  # each prepared the statement once

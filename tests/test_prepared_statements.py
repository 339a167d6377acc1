"""The app's fixed statements prepared on the server (usergroups.prepared): on PostgreSQL
they are planned once per connection, the setting turns it off, and a server that lost
them (as behind a pooler in transaction mode) costs no request its answer."""

import logging
from collections.abc import Iterator

import pytest
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext, override_settings

from tests.support.api import get_or_create
from usergroups import prepared, sql
from usergroups.models import UserGroup
from usergroups.records import RECORD_FIELDS

pytestmark = pytest.mark.django_db

postgres_only = pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="prepares only on PostgreSQL (psycopg 3)"
)


@pytest.fixture(autouse=True)
def fresh_state() -> Iterator[None]:
    """Each test starts with preparing allowed on every alias, and leaves it so."""
    prepared._refused.clear()
    yield
    prepared._refused.clear()


def statements_on_server() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def forget_on_server() -> None:
    """What a pooler does: the server connection no longer knows the statements that
    psycopg believes prepared (sent below psycopg, so its cache is not told)."""
    connection.ensure_connection()
    connection.connection.pgconn.exec_(b"DEALLOCATE ALL")


def lineage_of(team_id: int) -> list[tuple]:
    return sql.GROUP_BY_TEAM_ID.fetch([team_id])[1]


@postgres_only
def test_a_get_prepares_the_key_and_group_statements(api_client):
    assert get_or_create(api_client, {"user_group_id": "g"}).status_code == 200
    on_server = statements_on_server()
    assert any("usergroups_apikey" in text for text in on_server)
    assert any(text.startswith("WITH RECURSIVE lineage") for text in on_server)
    # Prepared statements carry placeholders, never a value (no key digest on the server).
    assert all("$1" in text for text in on_server)


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
    assert statements_on_server() == []


@postgres_only
def test_prepared_statements_are_in_the_query_log(group):
    with CaptureQueriesContext(connection) as captured:
        sql.GROUP_BY_PROVIDED_ID.fetch([group.workspace_id, group.provided_id])
    assert len(captured) == 1
    assert captured[0]["sql"].startswith("WITH RECURSIVE lineage")
    assert f"'{group.provided_id}'" in captured[0]["sql"]  # with its values, as Django logs


@postgres_only
@pytest.mark.django_db(transaction=True)  # a request outside a transaction, as served
def test_a_lost_statement_is_read_again_unprepared_and_preparing_stops(group, caplog):
    expected = lineage_of(group.team_id)
    forget_on_server()
    with caplog.at_level(logging.WARNING, logger="usergroups.prepared"):
        assert lineage_of(group.team_id) == expected
    assert "PREPARED_STATEMENTS" in caplog.text
    assert connection.alias in prepared._refused
    forget_on_server()
    assert lineage_of(group.team_id) == expected  # unprepared now: nothing to lose
    assert statements_on_server() == []


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_request_after_a_lost_statement_is_answered(api_client):
    assert get_or_create(api_client, {"user_group_id": "g"}).status_code == 200
    forget_on_server()
    answer = get_or_create(api_client, {"user_group_id": "g"})
    assert answer.status_code == 200
    assert answer.json()["new_user_group"] is False


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_lost_statement_inside_a_transaction_fails_it(group):
    lineage_of(group.team_id)
    forget_on_server()
    with pytest.raises(DatabaseError), transaction.atomic():
        lineage_of(group.team_id)
    assert connection.alias in prepared._refused
    assert lineage_of(group.team_id)  # the next read, unprepared, succeeds


@pytest.mark.skipif("connection.vendor == 'postgresql'", reason="the other databases")
def test_nothing_is_prepared_on_other_databases(group):
    assert not prepared.preparing(connection)
    assert lineage_of(group.team_id)[0][0] == group.team_id


@postgres_only
def test_one_preparing_cursor_per_connection_and_djangos_timestamps(group):
    row = lineage_of(group.team_id)[0]
    kept = connection._usergroups_cursor
    lineage_of(group.team_id)
    assert connection._usergroups_cursor is kept and not kept.closed
    created_at = row[RECORD_FIELDS.index("created_at")]
    stored = UserGroup.objects.values_list("created_at", flat=True).get(pk=group.pk)
    assert created_at == stored and created_at.tzinfo is stored.tzinfo  # aware, in UTC

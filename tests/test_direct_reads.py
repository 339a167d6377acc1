"""The app's fixed reads on SQLite's own cursor (usergroups.direct): the rows Django's
cursor gives, Django's exceptions, and Django's path wherever it adds something (a query
log, execute wrappers, an atomic block, no connection yet)."""

import pytest
from django.db import connection, transaction
from django.db.utils import OperationalError
from django.test.utils import CaptureQueriesContext

from usergroups import direct, sql

pytestmark = [
    pytest.mark.django_db(transaction=True),  # outside an atomic block, as requests read
    pytest.mark.skipif("connection.vendor != 'sqlite'", reason="SQLite's own cursor"),
]


def lineage_of(team_id: int) -> list[tuple]:
    return sql.GROUP_BY_TEAM_ID.fetch([team_id])[1]


@pytest.fixture
def direct_reads(monkeypatch) -> list[str]:
    """The statements read on SQLite's own cursor, in order."""
    reads: list[str] = []
    fetch_all = direct.fetch_all

    def counted(connection, sql, params):
        reads.append(sql)
        return fetch_all(connection, sql, params)

    monkeypatch.setattr(direct, "fetch_all", counted)
    return reads


def test_a_read_outside_a_transaction_is_direct_and_gives_djangos_rows(group, direct_reads):
    rows = lineage_of(group.team_id)
    assert len(direct_reads) == 1
    with CaptureQueriesContext(connection) as logged:
        assert lineage_of(group.team_id) == rows  # Django's cursor, for the log
    assert len(logged) == 1 and len(direct_reads) == 1
    assert rows[0][0] == group.team_id


def test_execute_wrappers_see_every_read(group, direct_reads):
    seen = []

    def wrapper(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        lineage_of(group.team_id)
    assert len(seen) == 1 and "lineage" in seen[0]
    assert direct_reads == []


def test_reads_in_an_atomic_block_take_djangos_path(group, direct_reads):
    with transaction.atomic():
        assert lineage_of(group.team_id)
    assert direct_reads == []


def test_a_closed_connection_is_opened_by_djangos_path(group, direct_reads):
    connection.close()
    assert lineage_of(group.team_id)
    assert direct_reads == []
    assert lineage_of(group.team_id)
    assert len(direct_reads) == 1


def test_one_cursor_per_connection(group):
    lineage_of(group.team_id)
    kept = connection._usergroups_cursor
    lineage_of(group.team_id)
    assert connection._usergroups_cursor is kept
    connection.close()
    connection.ensure_connection()
    lineage_of(group.team_id)
    assert connection._usergroups_cursor is not kept
    assert connection._usergroups_cursor.connection is connection.connection


def test_a_database_error_is_djangos(group, direct_reads):
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE usergroups_schemamapping RENAME TO moved_away")
    try:
        with pytest.raises(OperationalError, match="no such table"):
            lineage_of(group.team_id)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE moved_away RENAME TO usergroups_schemamapping")
    assert len(direct_reads) == 1

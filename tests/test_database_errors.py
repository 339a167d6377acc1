"""A database that fails mid-request is answered 503 ``service_unavailable`` with
``Retry-After``, in the contract's JSON error shape (CONTRACT.md section 3, "Failures"),
and the next request is served again.

The failures are real, caused from a second connection to the same test database: the
server's connection killed (``pg_terminate_backend`` on PostgreSQL, ``KILL`` on MariaDB),
or a lock it needs held past its lock timeout (every database). Each test closes its
connections at the end, so the database is usable by the tests after it.
"""

import sqlite3
import time
from contextlib import contextmanager

import pytest
from django.db import IntegrityError, close_old_connections, connection, connections
from django.db.utils import DataError, InterfaceError, InternalError, OperationalError

from tests.support.api import assert_error, send
from tests.support.embed import dashboard, minted
from usergroups.errors.handler import exception_handler
from usergroups.models import APIKey, UserGroup

pytestmark = pytest.mark.django_db(transaction=True)

GROUP_TABLE = UserGroup._meta.db_table
LOCK_TIMEOUT_MS = 300


@pytest.fixture(autouse=True)
def fresh_connection_afterwards():
    """A broken or retuned connection is closed after the test; Django reopens it for
    the next one (and for this test's teardown, which flushes the database)."""
    yield
    connection.close()


def assert_unavailable(response) -> None:
    assert_error(response, 503, "service_unavailable")
    assert response["Retry-After"].isdigit() and int(response["Retry-After"]) >= 1


def end_of_request() -> None:
    """What Django's handler does when a request finishes (the test client skips it):
    a connection that failed is closed, to be reopened by the next request."""
    close_old_connections()


@contextmanager
def other_connection():
    """A second Django connection to the test database, not the one requests use."""
    other = connections.create_connection(connection.alias)
    try:
        yield other
    finally:
        other.close()


def backend_id() -> int:
    """The server-side id of the connection requests use (opened if need be)."""
    query = {"postgresql": "SELECT pg_backend_pid()", "mysql": "SELECT CONNECTION_ID()"}
    with connection.cursor() as cursor:
        cursor.execute(query[connection.vendor])
        return cursor.fetchone()[0]


def kill(backend: int) -> None:
    """Kill the connection ``backend`` from another one, and wait until it is gone."""
    with other_connection() as other, other.cursor() as cursor:
        if other.vendor == "postgresql":
            cursor.execute("SELECT pg_terminate_backend(%s)", [backend])
            gone = "SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = %s"
        else:
            cursor.execute(f"KILL {int(backend)}")
            gone = "SELECT count(*) = 0 FROM information_schema.processlist WHERE id = %s"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            cursor.execute(gone, [backend])
            if cursor.fetchone()[0]:
                return
            time.sleep(0.02)
        raise AssertionError(f"connection {backend} still alive after 10 s")


needs_a_server = pytest.mark.skipif(
    "connection.vendor not in ('postgresql', 'mysql')",
    reason="SQLite has no server connection to kill; test_lock_timeout covers it",
)


@needs_a_server
def test_connection_killed_before_the_request(api_client, group):
    """The connection dies between requests, where no health check catches it (the test
    client skips Django's; a server's runs only at a request's first query)."""
    kill(backend_id())
    response = send(api_client, "GET", {"user_group_id": group.provided_id})
    assert_unavailable(response)

    end_of_request()
    response = send(api_client, "GET", {"user_group_id": group.provided_id})
    assert response.status_code == 200, response.content
    assert response.json()["user_group"]["token"] == group.token


@needs_a_server
def test_connection_killed_mid_request(api_client, group):
    """Killed after the API key was read and before the group is: a real kill, at the
    moment the request first reaches for the group table."""
    victim = backend_id()
    killed = []

    def kill_before_group_query(execute, sql, params, many, context):
        if not killed and GROUP_TABLE in sql:
            killed.append(sql)
            kill(victim)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(kill_before_group_query):
        response = send(api_client, "POST", {"current_token": group.token})
    assert killed, "the request never reached the group table"
    assert_unavailable(response)

    end_of_request()
    # The rotation did not happen: the token still rotates, once.
    response = send(api_client, "POST", {"current_token": group.token})
    assert response.status_code == 200, response.content
    assert UserGroup.objects.get(pk=group.pk).token == response.json()["user_group"]["token"]


@contextmanager
def group_locked(group):
    """Hold a write lock on ``group`` (SQLite: on the whole database) in another
    connection, and give requests a short lock timeout, until the block ends."""
    if connection.vendor == "sqlite":
        holder = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            with connection.cursor() as cursor:
                cursor.execute(f"PRAGMA busy_timeout = {LOCK_TIMEOUT_MS}")
            yield
        finally:
            holder.rollback()
            holder.close()
        return
    with other_connection() as other:
        other.set_autocommit(False)
        with other.cursor() as cursor:
            table, pk = other.ops.quote_name(GROUP_TABLE), other.ops.quote_name("team_id")
            cursor.execute(f"SELECT 1 FROM {table} WHERE {pk} = %s FOR UPDATE", [group.pk])
        timeout = {
            "postgresql": f"SET lock_timeout = {LOCK_TIMEOUT_MS}",
            "mysql": "SET SESSION innodb_lock_wait_timeout = 1",
        }
        with connection.cursor() as cursor:
            cursor.execute(timeout[connection.vendor])
        try:
            yield
        finally:
            other.rollback()


def test_lock_timeout(api_client, group):
    send(api_client, "GET", {"user_group_id": "warm-up"})  # the key's first use writes
    with group_locked(group):
        response = send(api_client, "PUT", {"user_group_id": group.provided_id, "name": "new"})
    assert_unavailable(response)
    assert UserGroup.objects.get(pk=group.pk).name == group.name

    end_of_request()
    response = send(api_client, "PUT", {"user_group_id": group.provided_id, "name": "new"})
    assert response.status_code == 200, response.content
    assert UserGroup.objects.get(pk=group.pk).name == "new"


@pytest.mark.parametrize(
    "error, status",
    [
        (OperationalError("server closed the connection unexpectedly"), 503),
        (InterfaceError("connection already closed"), 503),
        # psycopg's reading of a server connection cut under PgBouncer (the cluster test)
        (InternalError("received 2 results from command 'BEGIN'"), 503),
        (IntegrityError("duplicate key"), None),
        (DataError("value too long"), None),
    ],
    ids=["operational", "interface", "internal", "integrity", "data"],
)
def test_only_failures_of_the_database_are_503(error, status):
    """A constraint or data error is a bug of ours: it stays a 500 (None lets Django
    answer it), not hidden as a passing outage."""
    response = exception_handler(error, {})
    assert (response and response.status_code) == status


# --- a connection that died while idle: Django's CONN_HEALTH_CHECKS ----------------------


@pytest.fixture
def persistent_connection():
    """The connection as a server keeps it (the tests' settings close it after each
    request): persistent, with Django's health checks, opened anew with those settings."""
    saved = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict.update(CONN_MAX_AGE=60, CONN_HEALTH_CHECKS=True)
    connection.ensure_connection()
    yield
    connection.close()
    connection.settings_dict.update(saved)


def between_requests() -> None:
    """What Django does as one request ends and the next starts (the test client skips
    it): a persistent connection is kept, to be checked before its next query."""
    close_old_connections()


def first_read(api_client, group, kind: str):
    """A request whose first query will be one of the app's reads, to send: a get (the
    key lookup), a rotation (the key lookup), a host's view behind
    ``EmbedTokenAuthentication`` (the group's read; its token minted now)."""
    if kind == "get":
        return lambda: send(api_client, "GET", {"user_group_id": group.provided_id})
    if kind == "rotation":
        return lambda: send(api_client, "POST", {"current_token": group.token})
    token = minted(api_client, group.provided_id)
    return lambda: dashboard(token)


FIRST_READS = ["get", "rotation", "embed-token-verification"]


@needs_a_server
@pytest.mark.usefixtures("persistent_connection")
@pytest.mark.parametrize("kind", FIRST_READS)
def test_a_connection_killed_while_idle_is_replaced(api_client, group, kind):
    """With health checks on, a connection that died between requests fails nothing:
    Django's check before the request's first query finds it dead and opens a new one."""
    request = first_read(api_client, group, kind)
    victim = backend_id()
    kill(victim)
    between_requests()
    response = request()
    assert response.status_code == 200, response.content
    if kind == "get":
        assert response.json()["user_group"]["token"] == group.token
    assert backend_id() != victim


@pytest.mark.usefixtures("persistent_connection")
def test_a_read_refused_on_a_live_connection_is_not_retried(api_client, group):
    refused = []

    def refuse(execute, sql, params, many, context):
        if APIKey._meta.db_table in sql:
            refused.append(sql)
            raise OperationalError("canceling statement due to statement timeout")
        return execute(sql, params, many, context)

    between_requests()
    with connection.execute_wrapper(refuse):
        assert_unavailable(send(api_client, "GET", {"user_group_id": group.provided_id}))
    assert len(refused) == 1

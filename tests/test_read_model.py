"""The read model (CONTRACT section 9): on PostgreSQL a process answers its hot reads from
memory that the database's notifications keep current, and reads the database whenever
it cannot trust what it holds; elsewhere every read goes to the database.

These tests run outside a test transaction (``transactional_db``): inside one nothing is
committed, so nothing is heard, and the read model rightly stays out of the way (the
first test shows it). Writes come through every door: the API, the admin, a command,
host code, SQL typed by an operator on a connection of its own, another process.
"""

import functools
import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import timedelta

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.support import ROOT
from tests.support.admin import admin_url
from tests.support.api import client_for, get_or_create, send
from tests.support.embed import dashboard, minted, revoke
from tests.support.factories import APIKeyFactory, UserGroupFactory
from usergroups import read_model
from usergroups.embed import tokens
from usergroups.models import APIKey, UserGroup
from usergroups.read_model import listening
from usergroups.services import keys, verification

on_postgresql = pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="the read model listens on PostgreSQL"
)
#: How long an outside write may take to be in force everywhere (CONTRACT section 9).
OUTSIDE_WRITE_SECONDS = 0.1


@pytest.fixture
def site(transactional_db: None) -> Iterator[tuple[APIKey, UserGroup]]:
    """A key of a workspace and a group of it, committed; the listener stopped after."""
    key = APIKeyFactory.create()
    group = UserGroupFactory.create(workspace=key.workspace, properties={"region": "FR"})
    yield key, group
    read_model.stop()


def queries_of(call: Callable[[], object]) -> int:
    with CaptureQueriesContext(connection) as captured:
        call()
    return len(captured)


def heard_by_now(token: str) -> None:
    """Verify ``token`` until the process trusts memory again and holds its answer."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        dashboard(token)
        if queries_of(lambda: dashboard(token)) == 0:
            return
        time.sleep(0.01)
    raise AssertionError("the read model never answered from memory")


def remembered_token(key: APIKey, group: UserGroup) -> str:
    """A new token of ``group``, which the process now answers from memory."""
    token = minted(client_for(key.key), group.provided_id)
    heard_by_now(token)
    return token


def until_trusted() -> bool:
    """Wait (at most 5 s) until the process trusts memory again."""
    listener = read_model.process_listener()
    deadline = time.monotonic() + 5
    while not listener.trusted() and time.monotonic() < deadline:
        time.sleep(0.01)
    return listener.trusted()


def is_refused(token: str) -> bool:
    return dashboard(token).status_code == 401


def outside_sql(sql: str, *params: object) -> None:
    """``sql`` committed on a connection of its own, as an operator's psql would."""
    settings = connection.settings_dict
    with psycopg.connect(
        dbname=settings["NAME"],
        user=settings["USER"],
        host=settings["HOST"],
        port=settings["PORT"] or 5432,
        autocommit=True,
    ) as other:
        other.execute(sql, params)


def queue_usage() -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_notification_queue_usage()")
        return cursor.fetchone()[0]


def listener_backends() -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND datname = %s",
            [listening.APPLICATION_NAME, connection.settings_dict["NAME"]],
        )
        return [pid for (pid,) in cursor.fetchall()]


def test_inside_a_transaction_the_database_answers(db: None) -> None:
    key = APIKeyFactory.create()
    group = UserGroupFactory.create(workspace=key.workspace)
    token = minted(client_for(key.key), group.provided_id)
    with transaction.atomic():
        assert queries_of(lambda: dashboard(token)) == 1
        assert queries_of(lambda: dashboard(token)) == 1


@pytest.mark.skipif("connection.vendor == 'postgresql'")
def test_off_postgresql_every_read_goes_to_the_database(site) -> None:
    key, group = site
    token = minted(client_for(key.key), group.provided_id)
    assert not read_model.enabled()
    for _ in range(3):
        assert queries_of(lambda: dashboard(token)) == 1


@on_postgresql
def test_a_verified_token_costs_no_query(site) -> None:
    key, group = site
    token = remembered_token(key, group)
    response = dashboard(token)
    assert response.status_code == 200
    assert response.json()["variables"] == {"region": "FR"}


@on_postgresql
def test_an_api_key_and_a_group_cost_no_query_once_read(site) -> None:
    key, group = site
    client = client_for(key.key)
    body = {"user_group_id": group.provided_id}
    APIKey.objects.filter(pk=key.pk).update(last_used_at=None)
    get_or_create(client, body)  # records the key's use
    deadline = time.monotonic() + 5
    while True:
        with CaptureQueriesContext(connection) as captured:
            response = get_or_create(client, body)
        if len(captured) == 0 or time.monotonic() > deadline:
            break
    assert response.status_code == 200
    assert len(captured) == 0, [q["sql"] for q in captured]
    # A key's use alone forgets the key's own row (its new last_used_at is read once), not
    # the group, nor the key's tokens.
    outside_sql("UPDATE usergroups_apikey SET last_used_at = now()")
    time.sleep(OUTSIDE_WRITE_SECONDS)
    with CaptureQueriesContext(connection) as captured:
        get_or_create(client, body)
    assert [query["sql"] for query in captured] == [
        query["sql"] for query in captured if "usergroups_apikey" in query["sql"]
    ]
    assert len(captured) == 1
    assert queries_of(lambda: get_or_create(client, body)) == 0


@on_postgresql
@pytest.mark.parametrize("axis", ["user_group_id", "end_user_id", "embed_token", "all"])
def test_a_revocation_through_the_api_is_in_force_at_its_answer(site, axis) -> None:
    key, group = site
    client = client_for(key.key)
    token = minted(client, group.provided_id, end_user={"id": "anna"})
    heard_by_now(token)
    body = {
        "user_group_id": {"user_group_id": group.provided_id},
        "end_user_id": {"end_user_id": "anna"},
        "embed_token": {"embed_token": token},
        "all": {"all": True},
    }[axis]
    assert revoke(client, body).status_code == 200
    assert is_refused(token)  # no wait: the answer came once this process heard it


@on_postgresql
def test_a_key_revoked_by_its_command_ends_its_tokens_and_itself(site) -> None:
    key, group = site
    client, token = client_for(key.key), remembered_token(key, group)
    assert keys.find_api_key(key.key) is not None
    call_command("revoke_api_key", key.prefix, stdout=io.StringIO())
    assert is_refused(token)
    assert send(client, "GET", path="/api/user/list").status_code == 401


@on_postgresql
def test_a_change_through_the_api_is_seen_at_its_answer(site) -> None:
    key, group = site
    client, token = client_for(key.key), remembered_token(key, group)
    body = {"user_group_id": group.provided_id, "properties": {"region": "DE"}}
    assert send(client, "PUT", body).status_code == 200
    assert dashboard(token).json()["variables"] == {"region": "DE"}
    got = get_or_create(client, {"user_group_id": group.provided_id})
    assert got.json()["user_group"]["properties"] == {"region": "DE"}


@on_postgresql
@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE usergroups_usergroup SET embed_generation = embed_generation + 1",
        "UPDATE usergroups_workspace SET embed_generation = embed_generation + 1",
        "UPDATE usergroups_apikey SET revoked_at = now()",
        "DELETE FROM usergroups_usergroup",
        "TRUNCATE usergroups_usergroup CASCADE",
    ],
)
def test_sql_typed_by_an_operator_is_in_force_within_the_bound(site, sql) -> None:
    key, group = site
    token = remembered_token(key, group)
    outside_sql(sql)
    time.sleep(OUTSIDE_WRITE_SECONDS)
    assert is_refused(token)


@on_postgresql
def test_a_mapping_changed_by_sql_is_seen(site) -> None:
    key, group = site
    client = client_for(key.key)
    body = {"user_group_id": group.provided_id}
    send(client, "PUT", {**body, "mapping": {"s1": "d1"}})
    get = lambda: get_or_create(client, body)  # noqa: E731
    assert get().json()["user_group"]["mapping"] == {"s1": "d1"}
    outside_sql("UPDATE usergroups_schemamapping SET data_source_id = 'd2'")
    time.sleep(OUTSIDE_WRITE_SECONDS)
    assert get().json()["user_group"]["mapping"] == {"s1": "d2"}


@on_postgresql
def test_a_write_from_another_process_is_in_force(site) -> None:
    key, group = site
    token = remembered_token(key, group)
    code = f"from usergroups.services import embed;embed.revoke_embed_tokens({group.team_id})"
    # The test database, which pytest-django named, not the one DATABASE_URL names.
    database = connection.settings_dict
    url = f"postgres://{database['USER']}@{database['HOST']}:{database['PORT'] or 5432}"
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": f"{url}/{database['NAME']}",
    }
    subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        env=environment,
        check=True,
        timeout=60,
    )
    time.sleep(OUTSIDE_WRITE_SECONDS)
    assert is_refused(token)


@on_postgresql
def test_a_lost_listening_connection_fails_closed_then_forgets(site) -> None:
    key, group = site
    token = remembered_token(key, group)
    backends = listener_backends()
    assert len(backends) == 1
    # Revoked by SQL that nobody hears, then the listening connection cut.
    outside_sql("SELECT pg_terminate_backend(%s)", backends[0])
    outside_sql("UPDATE usergroups_usergroup SET embed_generation = embed_generation + 1")
    assert is_refused(token)
    assert queries_of(lambda: dashboard(token)) == 1  # not trusted: the database answers
    assert until_trusted(), "the listener never came back"
    assert listener_backends() not in ([], backends)
    assert is_refused(token)


@on_postgresql
def test_a_stalled_listener_fails_closed(site) -> None:
    key, group = site
    token = remembered_token(key, group)
    (backend,) = listener_backends()
    os.kill(backend, signal.SIGSTOP)  # the server process of the listening connection
    try:
        time.sleep(listening.STALE_SECONDS * 2)
        outside_sql("UPDATE usergroups_usergroup SET embed_generation = embed_generation + 1")
        assert is_refused(token)
        assert queries_of(lambda: dashboard(token)) == 1
    finally:
        os.kill(backend, signal.SIGCONT)
    assert until_trusted()
    assert is_refused(token)


@on_postgresql
def test_memory_stays_within_its_bound(site, settings) -> None:
    key, group = site
    settings.USERGROUPS = {**getattr(settings, "USERGROUPS", {}), "READ_MODEL_MAX_ENTRIES": 100}
    client = client_for(key.key)
    tokens = [minted(client, group.provided_id) for _ in range(150)]
    heard_by_now(tokens[0])
    for token in tokens:
        assert dashboard(token).status_code == 200
    memory = read_model.process_listener().memory
    assert len(memory) == 100
    assert queries_of(lambda: dashboard(tokens[-1])) == 0
    assert queries_of(lambda: dashboard(tokens[0])) == 1  # the least recently used went


@on_postgresql
def test_a_remembered_token_ends_when_its_key_expires(site) -> None:
    key, group = site
    expires = timezone.now() + timedelta(seconds=1)
    APIKey.objects.filter(pk=key.pk).update(expires_at=expires)
    token = minted(client_for(key.key), group.provided_id)
    heard_by_now(token)
    time.sleep(max(0.0, (expires - timezone.now()).total_seconds()) + 0.05)
    assert is_refused(token)  # nothing was written: the grant knew when


@on_postgresql
@pytest.mark.slow
def test_memory_is_flat_at_its_bound_over_100k_distinct_tokens(site, settings) -> None:
    """Every token is a new entry; past the bound, the least recently used make room,
    so what the process holds stops growing."""
    key, group = site
    settings.USERGROUPS = {**getattr(settings, "USERGROUPS", {}), "READ_MODEL_MAX_ENTRIES": 2000}
    minted_one = minted(client_for(key.key), group.provided_id)
    heard_by_now(minted_one)
    claims = tokens.verify(minted_one)
    sign = functools.partial(
        tokens.sign,
        team_id=group.team_id,
        user_group_id=group.provided_id,
        binding=claims.binding,
        issued_at=int(time.time()),
        expires_in=3600,
    )
    memory = read_model.process_listener().memory
    resident = []  # the process's resident memory after each 10,000 tokens
    for number in range(100_000):
        verification.grant_of(sign())
        if number % 10_000 == 9_999:
            resident.append(resource_usage())
    assert len(memory) == 2000
    # The bound is reached within the first 10,000: the next 90,000 add nothing lasting.
    assert max(resident) - resident[0] < 8 * 2**20, resident


def resource_usage() -> int:
    """Bytes of this process's resident set (Linux)."""
    pages = int(open("/proc/self/statm").read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


@on_postgresql
def test_a_mint_writes_its_event_and_reads_nothing_once_read(site) -> None:
    key, group = site
    client = client_for(key.key)
    remembered_token(key, group)  # the process trusts memory from here on
    body = {"user_group_id": group.provided_id}
    assert send(client, "POST", body, path="/api/user/embed-token").status_code == 200
    with CaptureQueriesContext(connection) as captured:
        assert send(client, "POST", body, path="/api/user/embed-token").status_code == 200
    assert [q["sql"].split()[0] for q in captured] == ["INSERT"], captured.captured_queries


@on_postgresql
@pytest.mark.slow
def test_a_stopped_listener_cannot_fill_the_notification_queue(site) -> None:
    """A process that stops reading (SIGSTOP) while notifications keep coming: once the
    server's queue holds more than the limit, a listening process's heartbeat ends the
    stopped one's connection, and the queue empties."""
    remembered_token(*site)
    settings = connection.settings_dict
    stopped = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import psycopg, sys, time;"
            f"c = psycopg.connect(dbname={settings['NAME']!r}, user={settings['USER']!r},"
            f" host={settings['HOST']!r}, port={settings['PORT'] or 5432},"
            f" autocommit=True, application_name={listening.APPLICATION_NAME!r});"
            f"c.execute('LISTEN {listening.CHANNEL}'); print(c.info.backend_pid, flush=True);"
            "time.sleep(120)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        backend = int(stopped.stdout.readline())
        os.kill(stopped.pid, signal.SIGSTOP)
        for _ in range(5):  # distinct payloads, so none is folded into another
            outside_sql(
                "SELECT pg_notify(%s, g::text) FROM generate_series(1, 200000) g",
                listening.CHANNEL,
            )
        deadline = time.monotonic() + 30
        while backend in listener_backends() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert backend not in listener_backends(), "the stopped listener was never ended"
        # The queue is the server's, shared by every database's listeners (other tests'
        # servers among them): it empties as the slowest of them reads.
        deadline = time.monotonic() + 60
        while queue_usage() >= listening.QUEUE_USAGE_LIMIT and time.monotonic() < deadline:
            time.sleep(0.2)
        assert queue_usage() < listening.QUEUE_USAGE_LIMIT
    finally:
        os.kill(stopped.pid, signal.SIGCONT)
        stopped.kill()
        stopped.wait(10)


@on_postgresql
def test_a_revocation_in_the_admin_is_in_force_at_its_answer(site, admin_user) -> None:
    key, group = site
    token = remembered_token(key, group)
    admin = Client()
    admin.force_login(admin_user)
    response = admin.post(admin_url("usergroup", "revoke_embed_tokens", group.pk))
    assert response.status_code == 302
    assert is_refused(token)


@on_postgresql
def test_a_key_rotated_away_by_its_command_ends_its_tokens_at_once(site) -> None:
    key, group = site
    token = remembered_token(key, group)
    call_command("rotate_api_key", key.prefix, "--grace-hours", "0", stdout=io.StringIO())
    assert is_refused(token)

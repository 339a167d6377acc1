"""The read model (CONTRACT section 9): on PostgreSQL a process answers its hot reads from
memory that the database's notifications keep current, and reads the database whenever
it cannot trust what it holds; elsewhere every read goes to the database.

These tests run outside a test transaction (``transactional_db``): inside one nothing is
committed, so nothing is heard, and the read model rightly stays out of the way (the
first test shows it). Writes come through every door: the API, the admin, a command,
host code, SQL typed by an operator on a connection of its own, another process.
"""

import contextlib
import copy
import functools
import io
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from unittest import mock

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection, router, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext, override_settings
from django.utils import timezone
from rest_framework.response import Response

from tests.support import ROOT
from tests.support.admin import admin_url
from tests.support.api import client_for, get_or_create, send
from tests.support.embed import DashboardView, dashboard, minted, revoke
from tests.support.factories import APIKeyFactory, UserGroupFactory
from tests.support.gunicorn import free_port
from tests.support.pgbouncer import RUN_AS, PgBouncer
from tests.support.read_model import until_trusted
from usergroups import read_model
from usergroups.checks import check_listening_connection
from usergroups.embed import tokens
from usergroups.models import APIKey, UserGroup
from usergroups.read_model import changes, listening, reads
from usergroups.read_model.memory import MISSING, Memory
from usergroups.services import end_users, groups, keys, verification

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
def test_memory_is_bounded_in_bytes_and_holds_a_groups_record_once(site, settings) -> None:
    """500 tokens of a group with 64 KiB of properties: every grant is kept within a
    4 MiB budget, as the group's record is held once (copied into each grant, they would
    weigh 500 times that)."""
    key, _group = site
    budget = 4 * 2**20
    settings.USERGROUPS = {**getattr(settings, "USERGROUPS", {}), "READ_MODEL_MAX_BYTES": budget}
    large = {f"region_{n}": ["x" * 60] * 8 for n in range(128)}  # 64 KiB of JSON
    assert len(json.dumps(large)) >= 64 * 1024
    group = UserGroupFactory.create(workspace=key.workspace, properties=large)
    sign = signer(minted(client_for(key.key), group.provided_id))
    heard_by_now(sign())
    memory = read_model.process_listener().memory
    record_bytes = reads.record_weight(verification.grant_of(sign()).group)
    assert record_bytes > 128 * 1024
    for _ in range(500):
        token = sign()
        for _attempt in range(50):  # a busy machine may delay the beat: until it is held
            verification.grant_of(token)
            if memory.get((reads.GRANT.name, token)) is not MISSING:
                break
    assert len(memory) >= 500
    assert memory.bytes <= budget
    assert memory.bytes < record_bytes + 500 * 8 * 1024  # the record once, small grants


def signer(minted_token: str) -> Callable[[], str]:
    """A maker of new tokens bound as ``minted_token`` is (its group, key, workspace):
    each a new answer to remember, signed without a mint's write."""
    claims = tokens.verify(minted_token)
    return functools.partial(
        tokens.sign,
        team_id=claims.team_id,
        user_group_id=claims.user_group_id,
        binding=claims.binding,
        issued_at=int(time.time()),
        expires_in=3600,
    )


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
def test_a_stopped_listener_cannot_fill_the_notification_queue(site, caplog) -> None:
    """A process that stops reading (SIGSTOP) while notifications keep coming: once the
    server's queue holds more than the limit, the beat ends the stopped one's connection,
    and the queue empties; a live listener, reading the same flood more slowly than the
    guard waits, is left alone, though it beats (the beat, taken between its reads, finds
    its own session blocked on its client every time)."""
    heard = itertools.count(1)

    def slowly(change, entries) -> None:
        if next(heard) % 1000 == 0:
            time.sleep(0.03)

    made: list[psycopg.Connection] = []
    live = extra_listener(slowly, made)
    try:
        with wanting_all_along(live):
            assert beats_instead_of_others(live, made) and until(live.trusted)
            (live_backend,) = beaters()
            stopped_backend = flood_past_a_stopped_listener()
            # Its session left alone, the live listener still has what is left of the
            # flood to read before it hears a beat: many seconds.
            assert live_backend in listener_backends() and until(live.trusted, 60)
    finally:
        live.stop()
    ended = [
        record.args[0]
        for record in caplog.records
        if record.name == listening.__name__ and record.msg.startswith("Ending")
    ]
    assert ended == [stopped_backend]


def flood_past_a_stopped_listener() -> int:
    """A listener of another process, stopped (SIGSTOP), and a million notifications: its
    session (the pid returned) is ended, and the queue empties."""
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
            "time.sleep(150)",
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
        deadline = time.monotonic() + listening.STOPPED_READER_SECONDS + 30
        while backend in listener_backends() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert backend not in listener_backends(), "the stopped listener was never ended"
        # The queue is the server's, shared by every database's listeners (other tests'
        # servers among them): it empties as the slowest of them reads.
        deadline = time.monotonic() + 60
        while queue_usage() >= listening.QUEUE_USAGE_LIMIT and time.monotonic() < deadline:
            time.sleep(0.2)
        assert queue_usage() < listening.QUEUE_USAGE_LIMIT
        return backend
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


# --- 0.5 (CONTRACT 9a): at scale --------------------------------------------------------


def remembered(token: str) -> bool:
    """Whether the process answers ``token`` from memory now (no query)."""
    return queries_of(lambda: dashboard(token)) == 0


@on_postgresql
def test_new_persons_and_sessions_forget_no_other_persons_tokens(site) -> None:
    """Churn in one workspace: new persons minted, one person's exclusive session; every
    other person's remembered token still costs no query."""
    key, group = site
    client = client_for(key.key)

    def token_for(person: str, **fields: object) -> str:
        return minted(client, group.provided_id, end_user={"id": person}, **fields)

    held = {person: token_for(person) for person in ("ana", "ben", "cy")}
    for token in held.values():
        heard_by_now(token)
    for number in range(5):
        token_for(f"new-{number}")  # each writes a new person
    token_for("ana", exclusive=True)  # ends ana's earlier tokens
    assert is_refused(held.pop("ana"))
    for token in held.values():
        assert remembered(token)


@on_postgresql
def test_a_groups_change_forgets_it_and_its_descendants_only(site) -> None:
    key, group = site
    workspace_id = key.workspace_id
    groups.create_group(workspace_id, "child", "Child", {}, {"tier": "b"}, group.provided_id)
    groups.create_group(workspace_id, "sibling", "Sibling", {}, {"tier": "c"})
    client = client_for(key.key)
    child, sibling = (minted(client, provided_id) for provided_id in ("child", "sibling"))
    for token in (child, sibling):
        heard_by_now(token)
    groups.update_group(workspace_id, group.provided_id, {"properties": {"region": "DE"}})
    assert not remembered(child)
    assert dashboard(child).json()["variables"] == {"region": "DE", "tier": "b"}
    assert remembered(sibling)


@on_postgresql
def test_a_keys_change_forgets_its_own_tokens_only(site) -> None:
    key, group = site
    other = APIKeyFactory.create(workspace=key.workspace)
    mine, theirs = (minted(client_for(k.key), group.provided_id) for k in (key, other))
    for token in (mine, theirs):
        heard_by_now(token)
    outside_sql("UPDATE usergroups_apikey SET name = 'renamed' WHERE id = %s", key.pk)
    time.sleep(OUTSIDE_WRITE_SECONDS)
    assert not remembered(mine)
    assert remembered(theirs)


class HostEditingView(DashboardView):
    """A host view that edits what it was handed, meaning its own request only."""

    def get(self, request):  # type: ignore[no-untyped-def]
        refused = []
        grant = request.auth
        for edit in (
            lambda: grant.variables["regions"].append("XX"),
            lambda: grant.variables.__setitem__("regions", ["XX"]),
            lambda: grant.variables.update(tier="all"),
            lambda: grant.group.properties["regions"].append("XX"),
            lambda: grant.claims.params.clear(),
        ):
            try:
                edit()
            except TypeError:
                refused.append(True)
        own = copy.deepcopy(grant.variables)  # a copy of its own is the host's to change
        own["regions"].append("XX")
        return Response({"refused": len(refused), "own": own})


@on_postgresql
def test_what_memory_hands_out_cannot_be_changed_by_a_host_view(site) -> None:
    """Through the documented authentication class: a host view's edits of
    ``request.auth`` reach no other request (on 0.4 they widened every later one's)."""
    key, _group = site
    group = UserGroupFactory.create(workspace=key.workspace, properties={"regions": ["FR"]})
    token = remembered_token(key, group)
    edited = dashboard(token, view=HostEditingView).json()
    assert edited == {"refused": 5, "own": {"regions": ["FR", "XX"]}}
    assert remembered(token)
    assert dashboard(token).json()["variables"] == {"regions": ["FR"]}


@on_postgresql
def test_each_request_gets_its_own_copy_of_a_remembered_api_key(site) -> None:
    key, _group = site
    first = keys.find_api_key(key.key)
    until_trusted()
    first = keys.find_api_key(key.key)
    first.name, first.scope_write = "edited", False
    with CaptureQueriesContext(connection) as captured:
        second = keys.find_api_key(key.key)
    assert len(captured) == 0
    assert second is not first
    assert (second.name, second.scope_write) == (key.name, True)


def listening_sessions() -> list[tuple[int, str, object]]:
    """(pid, last statement, when its state last changed) of this database's listeners."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, query, state_change FROM pg_stat_activity"
            " WHERE application_name = %s AND datname = %s ORDER BY pid",
            [listening.APPLICATION_NAME, connection.settings_dict["NAME"]],
        )
        return cursor.fetchall()


def beaters() -> list[int]:
    """The sessions holding the beat's lock on this database."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT l.pid FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
            " WHERE l.locktype = 'advisory' AND l.granted AND d.datname = %s"
            " AND (l.classid::bigint << 32 | l.objid::bigint) = %s",
            [connection.settings_dict["NAME"], listening.BEAT_LOCK],
        )
        return [pid for (pid,) in cursor.fetchall()]


def extra_listener(forgot=None, made: list | None = None) -> listening.Listener:
    """One more process's listener (its own memory and connections), started; ``made``
    gets the connections it makes (the listening one first)."""

    def connect(application_name: str) -> psycopg.Connection:
        opened = read_model.connect(application_name)
        if made is not None:
            made.append(opened)
        return opened

    listener = listening.Listener(connect, Memory(100, 2**20), forgot)
    listener.start()
    return listener


def beats_instead_of_others(listener: listening.Listener, made: list) -> bool:
    """``listener``, wanting memory, takes the beat over: any other session holding the
    beat's lock is ended until it beats (``made``: its connections, spared)."""
    deadline = time.monotonic() + 10
    while not listener.beating and time.monotonic() < deadline:
        for pid in set(beaters()) - {own.info.backend_pid for own in made}:
            outside_sql("SELECT pg_terminate_backend(%s)", pid)
        time.sleep(0.05)
    return listener.beating


@on_postgresql
def test_one_session_beats_and_only_for_the_listeners_that_want_memory(site) -> None:
    """Four listeners of one database: one beats. Idle (nobody wants memory), nobody
    beats and no listener runs a statement. While one wants memory the beat is fast and
    reaches it, not the idle ones. When the beater's session ends, one that wants memory
    takes over and every listener that wants memory trusts again."""
    remembered_token(*site)
    others = [extra_listener() for _ in range(3)]
    try:
        assert all(until(listener.trusted) for listener in others)
        assert len(beaters()) == 1
        time.sleep(listening.IDLE_AFTER_SECONDS + 0.5)  # nobody wants memory now
        before = listening_sessions()
        assert len(before) == 4
        idle_beats = beats_sent(2.0)
        after = listening_sessions()
        assert after == before  # the beater's listening session is silent too
        assert idle_beats == 0
        busy_beats = count_beats(others[0], 1.0, wanting=True)
        assert busy_beats >= 0.5 / listening.BEAT_SECONDS
        proofs = [listener.proven_at for listener in others[1:]]
        with wanting_all_along(others[0]):
            time.sleep(1.0)
        # The idle two heard none of the fast beats (one of them may beat, and hears its own).
        assert sum(heard.proven_at != p for heard, p in zip(others[1:], proofs, strict=True)) <= 1
        (beater,) = beaters()
        outside_sql("SELECT pg_terminate_backend(%s)", beater)
        deadline = time.monotonic() + 5
        while beaters() in ([], [beater]) and time.monotonic() < deadline:
            others[0].trusted()  # wanting memory: a missed beat is taken over at once
            time.sleep(0.02)
        assert beaters() not in ([], [beater])
        survivors = [listener for listener in others if listener.listening]
        assert survivors and all(until(listener.trusted) for listener in survivors)
    finally:
        for listener in others:
            listener.stop()


@on_postgresql
def test_the_beat_is_parsed_once_and_planned_once(site) -> None:
    """Under load the beat runs 40 times a second: on its session it is one prepared
    statement, reused with a generic plan (Django turns psycopg's preparing off, and the
    beat's look at pg_stat_activity is a large view to parse and plan each time)."""
    made: list[psycopg.Connection] = []
    listener = extra_listener(made=made)
    try:
        assert until(lambda: listener.listening)
        with wanting_all_along(listener):
            beats_instead_of_others(listener, made)
            assert until(listener.trusted)
            time.sleep(0.5)
        (beat,) = made[1:]  # the listening connection, then the beat's
        statements = beat.execute(
            "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements"
        ).fetchall()
    finally:
        listener.stop()
    (text, generic, custom), *others = [row for row in statements if "pg_notify" in row[0]]
    assert not others
    assert "pg_notification_queue_usage" in text
    # psycopg prepares it at once; PostgreSQL plans it 5 times, then once for all.
    assert custom <= 5 and generic >= 10


def beats_sent(seconds: float) -> int:
    """The beats sent on this database over ``seconds``, heard by a session of the test's."""
    with read_model.connect("beat-counter") as counter:
        counter.execute(f"LISTEN {listening.BEAT_CHANNEL}")
        return sum(1 for _ in counter.notifies(timeout=seconds))


@contextlib.contextmanager
def wanting_all_along(listener: listening.Listener) -> Iterator[None]:
    """``listener`` asks for memory every few milliseconds, as a busy process does."""
    done = threading.Event()

    def want() -> None:
        while not done.wait(0.005):
            listener.trusted()

    thread = threading.Thread(target=want)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def count_beats(listener: listening.Listener, seconds: float, *, wanting: bool) -> float:
    """Beats ``listener`` hears a second over ``seconds`` (its proof moves at each);
    ``wanting``: asking for memory all along, as a busy process does."""
    seen, deadline = set(), time.monotonic() + seconds
    while time.monotonic() < deadline:
        if wanting:
            listener.trusted()
        if listener.proven_at is not None:
            seen.add(listener.proven_at)
        time.sleep(0.002)
    return len(seen) / seconds


def until(condition: Callable[[], bool], seconds: float = 5) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


@on_postgresql
def test_a_request_trusts_what_has_arrived_whatever_the_listeners_thread_did(site) -> None:
    """A listener whose thread never runs: the requests' own reads of its socket bring the
    shared beat, and it trusts memory; a change is heard the same way."""
    remembered_token(*site)
    idle = listening.Listener(read_model.connect, Memory(100, 2**20))
    assert idle.listen()  # listening, its thread never started
    try:
        assert until(idle.trusted)
        idle.memory.put(
            "answer", 1, [changes.workspace(site[0].workspace_id)], idle.memory.mark(), 1
        )
        outside_sql(
            "UPDATE usergroups_workspace SET name = 'x' WHERE id = %s", site[0].workspace_id
        )
        assert until(lambda: idle.trusted() and len(idle.memory) == 0)
    finally:
        idle.stop()


@on_postgresql
@pytest.mark.needs("pgbouncer")
def test_behind_a_transaction_pooler_memory_is_never_trusted(site, tmp_path_factory) -> None:
    """No setting says so (no LISTEN_DATABASE, no DISABLE_SERVER_SIDE_CURSORS): a listener
    that connects through PgBouncer in transaction mode never trusts memory, and never
    beats, while writes and beats go on around it."""
    settings = connection.settings_dict
    workdir = Path(tempfile.mkdtemp(prefix="pooled-"))
    bouncer = PgBouncer(
        workdir, settings["NAME"], "127.0.0.1", free_port(), ("127.0.0.1", settings["PORT"] or 5432)
    ).start()

    def through_bouncer(application_name: str) -> psycopg.Connection:
        return psycopg.connect(
            host="127.0.0.1",
            port=bouncer.port,
            dbname=settings["NAME"],
            user=RUN_AS,
            autocommit=True,
            application_name=application_name,
        )

    remembered_token(*site)
    pooled = listening.Listener(through_bouncer, Memory(100, 2**20))
    pooled.start()
    try:
        deadline = time.monotonic() + 2
        trusted_once = False
        while time.monotonic() < deadline:
            trusted_once |= pooled.trusted()
            outside_sql(
                "UPDATE usergroups_workspace SET name = 'x' WHERE id = %s", site[0].workspace_id
            )
            time.sleep(0.05)
        assert pooled.listening and pooled.pooled
        assert not trusted_once and not pooled.beating
        # `check --database default` says so when it can tell: here it can.
        assert check_listening_connection(None, databases=["default"]) == []
        with mock.patch.object(read_model, "connect", through_bouncer):
            (warning,) = check_listening_connection(None, databases=["default"])
        assert warning.id == "usergroups.W006"
    finally:
        pooled.stop()
        bouncer.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@on_postgresql
def test_memory_reads_the_primary_under_a_replica_router(site, settings) -> None:
    """A router sending reads to a replica: the read model loads from the database it
    hears (the primary); with the read model off, the router's choice stands."""
    with override_settings(DATABASE_ROUTERS=["tests.test_read_model.ReplicaRouter"]):
        assert router.db_for_read(UserGroup) == "replica"
        assert reads.GRANT.database() == reads.API_KEY.database() == "default"
        settings.USERGROUPS = {**getattr(settings, "USERGROUPS", {}), "READ_MODEL": False}
        assert reads.GRANT.database() == "replica"


class ReplicaRouter:
    def db_for_read(self, model, **hints):  # type: ignore[no-untyped-def]
        return "replica"


@on_postgresql
def test_the_read_models_instruments_move(site, telemetry_reader) -> None:
    """Answers by source, what a change forgot and why, the gauges of one process; and a
    verification read from the database has its span."""
    key, group = site
    client = client_for(key.key)
    token = minted(client, group.provided_id, end_user={"id": "ana"})
    heard_by_now(token)
    answers = "usergroups.read_model.answers"
    from_memory = telemetry_reader.total(
        answers, **{"usergroups.read": "embed token", "usergroups.source": "memory"}
    )
    assert from_memory >= 1
    assert (
        telemetry_reader.total(
            answers, **{"usergroups.read": "embed token", "usergroups.source": "database"}
        )
        >= 1
    )
    assert telemetry_reader.spans("usergroups.read_model.load")
    dashboard(token)
    assert (
        telemetry_reader.total(
            answers, **{"usergroups.read": "embed token", "usergroups.source": "memory"}
        )
        == from_memory + 1
    )
    end_users.put_end_user(key.workspace_id, "ana", {"display_name": "Ana"})
    assert until(
        lambda: (
            telemetry_reader.by("usergroups.read_model.forgotten", "usergroups.reason").get(
                "person", 0
            )
            >= 1
        )
    )
    points = {
        point.instrument: point.value
        for point in telemetry_reader.collect()
        if point.instrument.startswith("usergroups.read_model.")
        and point.instrument not in (answers, "usergroups.read_model.forgotten")
    }
    assert points["usergroups.read_model.listening"] == 1, points
    assert 0 <= points["usergroups.read_model.proof.age"] < 5, points

"""``manage.py usergroups_status``: what an operator learns about the read model from the
database. On PostgreSQL the listening, beating and lock-holding sessions are real
connections the test opens with psycopg, as a process of the site would."""

import io
import json
import re
import subprocess
import sys
from collections.abc import Iterator

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from tests.support import ROOT
from tests.support.deployment import database_url, server_env
from usergroups.read_model.listening import BEAT_LOCK as USERGROUPS_BEAT_LOCK

# Outside a test transaction: pg_stat_activity is read once per transaction.
pytestmark = pytest.mark.django_db(transaction=True)

on_postgresql = pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="the read model listens on PostgreSQL"
)
elsewhere = pytest.mark.skipif(
    "connection.vendor == 'postgresql'", reason="the read model is off on other databases"
)


def status(*args: str) -> tuple[str, int]:
    """The command's stdout and its exit status (1 when it raised ``CommandError``)."""
    out = io.StringIO()
    try:
        call_command("usergroups_status", *args, stdout=out)
    except CommandError as error:
        assert str(error) == "The read model is on, but no process listens."
        return out.getvalue(), error.returncode
    return out.getvalue(), 0


@pytest.fixture
def sessions() -> Iterator[list[psycopg.Connection]]:
    """Opens sessions on the test database by application name; all closed after."""
    opened: list[psycopg.Connection] = []

    def session(application_name: str, dbname: str | None = None) -> psycopg.Connection:
        params = connection.get_connection_params()
        if dbname:
            params["dbname"] = dbname
        conn = psycopg.connect(**params, autocommit=True, application_name=application_name)
        opened.append(conn)
        return conn

    yield session
    for conn in opened:
        conn.close()


@on_postgresql
def test_nobody_listening_fails_and_says_so():
    out, code = status()
    assert code == 1
    assert "Read model: on;" in out
    assert "Processes listening: 0" in out
    assert "Proof of hearing: nobody holds the beat lock" in out


@on_postgresql
def test_listeners_by_host_and_name_and_who_beats(sessions):
    listeners = [sessions("usergroups-listen") for _ in range(3)]
    for conn in listeners:
        conn.execute("LISTEN usergroups")
    # The beater: its listening session holds the lock, a second one beats.
    listeners[1].execute("SELECT pg_advisory_lock(%s)", [USERGROUPS_BEAT_LOCK])
    beat = sessions("usergroups-beat")
    beat.execute("SELECT pg_notify('usergroups_beat', 'now')")
    # Not counted: another advisory lock, a listener of another database, another app.
    sessions("someone-else").execute("SELECT pg_advisory_lock(%s)", [USERGROUPS_BEAT_LOCK + 1])
    sessions("usergroups-listen", dbname="postgres").execute("LISTEN usergroups")
    sessions("psql")

    out, code = status("--json")
    assert code == 0
    found = json.loads(out)
    assert found["read_model"] == "on" and found["off_because"] is None
    assert found["database"] == connection.settings_dict["NAME"]
    assert found["listening_processes"] == 3
    assert found["connections"] == [
        {"application_name": name, "client": "127.0.0.1", "client_hostname": None, "count": n}
        for name, n in (("usergroups-listen", 3), ("usergroups-beat", 1))
    ]
    assert 0 <= found["notification_queue_usage"] <= 1  # a share of the whole server's queue
    beater = found["beater"]
    assert beater["pid"] == listeners[1].info.backend_pid
    assert beater["application_name"] == "usergroups-listen"
    assert beater["beat_pid"] == beat.info.backend_pid
    assert 0 <= beater["last_beat_seconds"] < 60

    text, code = status()
    assert code == 0
    assert "Processes listening: 3" in text
    assert "  127.0.0.1                usergroups-listen    3" in text
    assert "  127.0.0.1                usergroups-beat      1" in text
    # The queue is the server's, shared with every database (other tests' floods too).
    assert re.search(r"^Notification queue: \d+\.\d\d% used", text, re.MULTILINE), text
    assert (
        f"Proof of hearing: pid {beater['pid']} (usergroups-listen on 127.0.0.1) holds the"
        f" beat lock; last beat " in text
    )
    assert f"s ago (pid {beat.info.backend_pid}, usergroups-beat)." in text


@on_postgresql
def test_listening_without_a_beater_passes_but_says_nobody_beats(sessions):
    sessions("usergroups-listen").execute("LISTEN usergroups")
    out, code = status("--json")
    assert code == 0
    assert json.loads(out)["beater"] is None


@on_postgresql
def test_turned_off_nobody_listening_is_no_failure(settings):
    settings.USERGROUPS = {"READ_MODEL": False}
    out, code = status()
    assert code == 0
    assert out.startswith('Read model: off (USERGROUPS["READ_MODEL"] is False); database ')


@on_postgresql
def test_the_exit_status_of_a_real_process():
    env = server_env(database_url(connection.settings_dict))
    done = subprocess.run(
        [sys.executable, "manage.py", "usergroups_status"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "Processes listening: 0" in done.stdout
    assert done.stderr.strip() == "CommandError: The read model is on, but no process listens."


@elsewhere
def test_off_on_other_databases():
    out, code = status()
    assert code == 0
    assert out == (
        "Read model: off (the read model runs on PostgreSQL only, and this database is "
        f"{connection.vendor}).\n"
    )
    found = json.loads(status("--json")[0])
    assert found == {
        "database_alias": "default",
        "off_because": "the read model runs on PostgreSQL only, and this database is "
        + connection.vendor,
        "read_model": "off",
        "vendor": connection.vendor,
    }

"""No race between the four operations on one id produces a 5xx (CONTRACT.md section 3,
"Hardening rules"), across a real multi-process server.

gunicorn runs ``example_project`` with 3 sync workers (as deployed: its own settings) on
SQLite, PostgreSQL and MariaDB. For at least ``SECONDS`` seconds, ``CLIENTS`` threads
loop at random over get-or-create, rotate, update, rename (to and from the id) and
delete, all aimed at the same two ids, so every interleaving of every pair comes up.
Every answer must be JSON in the contract's shape with a status the operation may give;
none may be a 5xx, and the server may log no traceback.

PostgreSQL and MariaDB runs make their own uniquely named database and drop it after.
An unreachable database fails the test when ``CI=true`` and skips it otherwise.
Loopback only; bounded in time (``SECONDS`` of load, request timeouts, thread joins).
"""

import collections
import http.client
import json
import os
import random
import re
import secrets
import threading
import time
from contextlib import contextmanager
from typing import NoReturn

import pytest

from tests.support import HOST, services
from tests.support.api import GROUP_KEYS
from tests.support.deployment import migrated_site
from tests.support.gunicorn import Gunicorn

pytestmark = [pytest.mark.live, pytest.mark.slow]

SECONDS = 12
CLIENTS = 8
WORKERS = 3
REQUEST_TIMEOUT = 40  # over the SQLite busy timeout of example_project (20 s)
IDS = ("race-x", "race-y")  # renames go from one to the other
POSTGRES = {"host": "127.0.0.1", "port": 5432, "user": "postgres"}
MARIADB = {"host": "127.0.0.1", "port": 3306, "user": "root"}
TOKEN = re.compile(r"^ugt_[A-Za-z0-9_-]{43}$")


def unreachable(what: str, exc: Exception) -> NoReturn:
    services.unavailable(f"{what} is unreachable: {exc}")


def database_name() -> str:
    return f"usergroups_race_{os.getpid()}_{secrets.token_hex(4)}"


@contextmanager
def postgres_database():
    """A new PostgreSQL database for this run, dropped afterwards; its URL."""
    import psycopg

    admin = "postgresql://{user}@{host}:{port}/postgres".format(**POSTGRES)
    name = database_name()
    try:
        with psycopg.connect(admin, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"CREATE DATABASE {name}")
    except psycopg.OperationalError as exc:
        unreachable("PostgreSQL", exc)
    try:
        yield "postgres://{user}@{host}:{port}/".format(**POSTGRES) + name
    finally:
        with psycopg.connect(admin, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@contextmanager
def mariadb_database():
    """A new MariaDB database for this run, dropped afterwards; its URL."""
    try:
        import MySQLdb
    except ImportError:
        services.unavailable("the MariaDB driver is not installed (pip install -e '.[mysql]')")
    name = database_name()

    def execute(sql: str) -> None:
        conn = MySQLdb.connect(connect_timeout=5, **MARIADB)
        try:
            conn.cursor().execute(sql)
        finally:
            conn.close()

    try:
        execute(f"CREATE DATABASE {name} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
    except MySQLdb.OperationalError as exc:
        unreachable("MariaDB", exc)
    try:
        yield "mysql://{user}@{host}:{port}/".format(**MARIADB) + name
    finally:
        execute(f"DROP DATABASE IF EXISTS {name}")


@contextmanager
def sqlite_database(tmp_path):
    yield f"sqlite:///{tmp_path / 'race.sqlite3'}"


@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def race_server(request, tmp_path):
    """gunicorn with 3 workers on a fresh database of the parameter's kind, and a key."""
    databases = {
        "sqlite": lambda: sqlite_database(tmp_path),
        "postgresql": postgres_database,
        "mariadb": mariadb_database,
    }
    with databases[request.param]() as url:
        env, key = migrated_site(url, "race")
        with Gunicorn(env, tmp_path / "gunicorn.log", WORKERS, "--max-requests", "0") as server:
            server.key = key
            yield server
        log = server.log()
    assert "Traceback" not in log, log[-5000:]


# --- The contract's answer shapes ----------------------------------------------------------

ROTATED_KEYS = {"team_id", "token", "name", "provided_id"}
DELETED_KEYS = {"team_id", "name", "provided_id"}


def group_problems(group, keys: set[str]) -> list[str]:
    if not isinstance(group, dict) or set(group) != keys:
        return [f"user_group keys {sorted(group) if isinstance(group, dict) else group}"]
    problems = []
    if type(group["team_id"]) is not int:
        problems.append("team_id not an integer")
    if "token" in keys and not TOKEN.match(str(group["token"])):
        problems.append("token not a group token")
    if group["provided_id"] not in IDS or type(group["name"]) is not str:
        problems.append(f"provided_id/name {group['provided_id']!r}/{group['name']!r}")
    if "mapping" in keys and not isinstance(group["mapping"], dict):
        problems.append("mapping not an object")
    return problems


def error_problems(body: dict, status: int, allowed: dict[int, str]) -> list[str]:
    if status not in allowed:
        return [f"status {status} not expected"]
    error = body.get("error")
    if set(body) != {"success", "error"} or body["success"] != 0 or not isinstance(error, dict):
        return ["not the error shape"]
    code, fields = allowed[status]
    problems = []
    if error.get("code") != code or not error.get("message"):
        problems.append(f"error {error}")
    if fields is None and "fields" in error:
        problems.append(f"unexpected fields {error['fields']}")
    if fields is not None and set(error.get("fields", {})) != fields:
        problems.append(f"fields {error.get('fields')}")
    return problems


NOT_FOUND = {404: ("not_found", None)}
# What each operation may answer besides 200 (its success shape).
OPERATIONS = {
    "get_or_create": ("GET", GROUP_KEYS, {}),
    "rotate": ("POST", ROTATED_KEYS, NOT_FOUND),
    "update": ("PUT", GROUP_KEYS, NOT_FOUND),
    "rename": ("PUT", GROUP_KEYS, {**NOT_FOUND, 409: ("conflict", None)}),
    "delete": ("DELETE", DELETED_KEYS, NOT_FOUND),
    "delete_by_token": ("DELETE", DELETED_KEYS, NOT_FOUND),
}


def answer_problems(op: str, status: int, body) -> list[str]:
    _, keys, errors = OPERATIONS[op]
    if not isinstance(body, dict):
        return ["not a JSON object"]
    if status != 200:
        return error_problems(body, status, errors)
    problems = group_problems(body.get("user_group"), keys)
    expected = {"success", "user_group"} | ({"new_user_group"} if op == "get_or_create" else set())
    if set(body) != expected or body["success"] != 1:
        problems.append(f"keys {sorted(body)}")
    if op == "get_or_create" and type(body.get("new_user_group")) is not bool:
        problems.append("new_user_group not a boolean")
    return problems


# --- The load ------------------------------------------------------------------------------


class Client(threading.Thread):
    def __init__(self, number: int, server, deadline: float, tokens: list, lock):
        super().__init__(name=f"race-client-{number}", daemon=True)
        self.server, self.deadline, self.tokens, self.lock = server, deadline, tokens, lock
        self.random = random.Random(number)
        self.answers: collections.Counter = collections.Counter()
        self.problems: list[str] = []

    def request(self, op: str, body: dict) -> None:
        method = OPERATIONS[op][0]
        conn = http.client.HTTPConnection(HOST, self.server.port, timeout=REQUEST_TIMEOUT)
        try:
            conn.request(
                method,
                "/api/user",
                body=json.dumps(body),
                headers={
                    "Authorization": f"Token {self.server.key}",
                    "Content-Type": "application/json",
                },
            )
            response = conn.getresponse()
            raw = response.read()
            status, content_type = response.status, response.getheader("Content-Type")
        except (OSError, http.client.HTTPException) as exc:
            self.answers[(op, type(exc).__name__)] += 1
            self.problems.append(f"{op}: no answer: {exc!r}")
            return
        finally:
            conn.close()
        self.answers[(op, status)] += 1
        try:
            answer = json.loads(raw)
        except ValueError:
            answer = None
        problems = answer_problems(op, status, answer)
        if content_type != "application/json":
            problems.append(f"Content-Type {content_type}")
        if problems:
            self.problems.append(f"{op} {status}: {problems}: {raw[:300]!r}")
            return
        group = answer.get("user_group", {}) if status == 200 else {}
        if "token" in group:
            with self.lock:
                self.tokens.append(group["token"])
                del self.tokens[:-20]

    def token(self) -> str:
        """Mostly the last token seen, the likeliest to be current; sometimes an older one."""
        with self.lock:
            if not self.tokens:
                return "ugt_" + "A" * 43
            return (
                self.tokens[-1] if self.random.random() < 0.8 else self.random.choice(self.tokens)
            )

    def body(self, op: str, n: int) -> dict:
        """A valid body for ``op``, aimed at one of the two ids (a rename: from the other)."""
        target, other = self.random.sample(IDS, 2)
        if op == "get_or_create":
            return {"user_group_id": target, "mapping": {"sales": f"pg-{n}"}, "properties": {}}
        if op == "update":
            mapping = {"sales": f"pg-{n}", "hr": "pg-hr"}
            return {"user_group_id": target, "name": f"n{n}", "mapping": mapping}
        if op == "rename":
            return {"user_group_id": other, "new_user_group_id": target}
        if op == "delete":
            return {"user_group_id": target}
        return {"current_token": self.token()}  # rotate, delete_by_token

    def run(self) -> None:
        ops, weights = list(OPERATIONS), [35, 10, 10, 15, 20, 10]
        n = 0
        while time.monotonic() < self.deadline:
            n += 1
            op = self.random.choices(ops, weights)[0]
            self.request(op, self.body(op, n))


def test_no_interleaving_of_the_four_operations_gives_a_5xx(race_server):
    tokens, lock = [], threading.Lock()
    started = time.monotonic()
    deadline = started + SECONDS
    clients = [Client(i, race_server, deadline, tokens, lock) for i in range(CLIENTS)]
    for client in clients:
        client.start()
    for client in clients:
        client.join(SECONDS + 2 * REQUEST_TIMEOUT)
    elapsed = time.monotonic() - started
    assert not any(client.is_alive() for client in clients), "a client hung"

    answers = sum((client.answers for client in clients), collections.Counter())
    problems = [problem for client in clients for problem in client.problems]
    print(f"{sum(answers.values())} requests in {elapsed:.1f} s:", dict(sorted(answers.items())))
    server_errors = {k: n for k, n in answers.items() if isinstance(k[1], int) and k[1] >= 500}
    assert not server_errors, (server_errors, problems[:20])
    assert not problems, problems[:20]
    assert elapsed >= SECONDS
    # The interleavings happened: every operation succeeded, and deletes and renames
    # found their group, many times over.
    for op in OPERATIONS:
        assert answers[(op, 200)] >= 3, (op, dict(answers))
    assert answers[("get_or_create", 200)] >= 100, dict(answers)

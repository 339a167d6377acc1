"""The benchmark's database on each backend, and the environment of a server on it.

SQLite: a file in bench/out; PostgreSQL: the schema ``bench`` of the database
``BENCH_PG_URL`` names (``bench`` at 127.0.0.1 by default, created when missing). Each
run starts from an empty one, migrated and seeded by bench/seed.py.
"""

import json
import os
import time
from typing import TYPE_CHECKING, Any

from bench import OUT, log
from tests.support import HOST
from tests.support.deployment import manage, run_python
from tests.support.deployment import server_env as deployed_env

if TYPE_CHECKING:
    import psycopg

SECRET = "bench-only-secret-key-not-for-production-0123456789abcdefghij"
PG_URL = os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432/bench")
PG_SCHEMA = "bench"
SQLITE = OUT / "bench.sqlite3"


def server_env(
    backend: str, prepare_threshold: int | None = None, pg_url: str = PG_URL
) -> dict[str, str]:
    """The environment of ``bench.site`` on ``backend``'s database (PostgreSQL: the schema
    ``bench`` of ``pg_url``)."""
    extra = {}
    if backend == "postgres":
        extra["BENCH_PG_SCHEMA"] = PG_SCHEMA
        if prepare_threshold is not None:
            extra["DATABASE_PREPARE_THRESHOLD"] = str(prepare_threshold)
    return deployed_env(
        pg_url if backend == "postgres" else f"sqlite:///{SQLITE}",
        "bench.site.settings",
        DJANGO_SECRET_KEY=SECRET,
        DJANGO_ALLOWED_HOSTS=f"{HOST},localhost",
        **extra,
    )


def pg_connect(dbname: str | None = None) -> "psycopg.Connection[Any]":
    """A connection to ``BENCH_PG_URL`` (or to ``dbname`` on its server)."""
    import psycopg

    conninfo = psycopg.conninfo.make_conninfo(PG_URL, **({"dbname": dbname} if dbname else {}))
    return psycopg.connect(conninfo, autocommit=True, connect_timeout=5)


def pg_available() -> bool:
    """Whether PostgreSQL answers; creates the database when it is missing."""
    import psycopg
    from psycopg import sql

    name = database_name(PG_URL)
    try:
        with pg_connect("postgres") as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
                log(f"created PostgreSQL database {name}")
        return True
    except psycopg.Error as exc:
        log(f"PostgreSQL is not reachable at {PG_URL}: {exc}")
        return False


def database_name(pg_url: str) -> str:
    import psycopg

    name: str = psycopg.conninfo.conninfo_to_dict(pg_url)["dbname"]
    return name


def prepare(backend: str, groups: int, pg_url: str = PG_URL) -> dict[str, str]:
    """An empty database (PostgreSQL: the schema ``bench`` of ``pg_url``), migrated and
    seeded with ``groups`` groups; the secrets the load generator sends."""
    started = time.monotonic()
    if backend == "sqlite":
        for suffix in ("", "-wal", "-shm"):
            SQLITE.with_name(SQLITE.name + suffix).unlink(missing_ok=True)
    else:
        with pg_connect(database_name(pg_url)) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {PG_SCHEMA} CASCADE")
            conn.execute(f"CREATE SCHEMA {PG_SCHEMA}")
    env = server_env(backend, pg_url=pg_url)
    manage(env, "migrate", "--noinput", "-v0", timeout=None)
    seeded = run_python(env, "-m", "bench.seed", str(groups), timeout=None)
    if backend == "postgres":
        with pg_connect(database_name(pg_url)) as conn:
            conn.execute("ANALYZE")  # the planner's statistics of the seeded tables
    secrets: dict[str, str] = json.loads(seeded.strip().splitlines()[-1])
    log(f"{backend}: {groups:,} groups seeded in {time.monotonic() - started:.0f} s")
    return secrets

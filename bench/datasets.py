"""The benchmark's data sets: one SQLite file or PostgreSQL schema (of database ``bench``)
each, migrated and seeded by bench/seed.py, and the environment of a server on one.

``1k`` (1,000 groups, read-only scenarios), ``1m`` (1,000,000 groups by default) and
``scratch`` (creation and rotation, which write).
"""

import json
import os
import shutil
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import OUT, log
from tests.support import HOST
from tests.support.deployment import manage, run_python
from tests.support.deployment import server_env as deployed_env

if TYPE_CHECKING:
    import psycopg

SECRET = "bench-only-secret-key-not-for-production-0123456789abcdefghij"
PG_URL = os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432/bench")


def server_env(backend: str, dataset: str) -> dict[str, str]:
    """The environment of ``bench.site`` on ``dataset`` of ``backend``."""
    if backend == "sqlite":
        url, where = f"sqlite:///{OUT / f'sqlite-{dataset}.sqlite3'}", {}
    else:
        url, where = PG_URL, {"BENCH_PG_SCHEMA": f"bench_{dataset}"}
    return deployed_env(
        url,
        "bench.site.settings",
        DJANGO_SECRET_KEY=SECRET,
        DJANGO_ALLOWED_HOSTS=f"{HOST},localhost",
        **where,
    )


def pg_connect(dbname: str | None = None) -> "psycopg.Connection[Any]":
    """A connection to ``BENCH_PG_URL`` (or to ``dbname`` on its server)."""
    import psycopg

    conninfo = psycopg.conninfo.make_conninfo(PG_URL, **({"dbname": dbname} if dbname else {}))
    return psycopg.connect(conninfo, autocommit=True, connect_timeout=5)


def pg_available() -> bool:
    try:
        with pg_connect("postgres") as conn:
            name = PG_URL.rsplit("/", 1)[-1].split("?")[0]
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
                conn.execute(f'CREATE DATABASE "{name}"')
                log(f"created PostgreSQL database {name}")
        return True
    except Exception as exc:  # noqa: BLE001
        log(f"PostgreSQL is not reachable at {PG_URL}: {exc}")
        return False


def prepare(backend: str, dataset: str, rows: int, reuse: bool) -> dict[str, Any]:
    """Migrate and seed one data set; its credentials (cached in bench/out for --reuse)."""
    info_path = OUT / f"{backend}-{dataset}.json"
    env = server_env(backend, dataset)
    if reuse and info_path.exists():
        info: dict[str, Any] = json.loads(info_path.read_text())
        if info.get("rows") == rows and (
            backend != "sqlite" or (OUT / f"sqlite-{dataset}.sqlite3").exists()
        ):
            return info
    started = time.monotonic()
    if backend == "sqlite":
        for suffix in ("", "-wal", "-shm"):
            (OUT / f"sqlite-{dataset}.sqlite3{suffix}").unlink(missing_ok=True)
        shutil.copyfile(sqlite_template(), OUT / f"sqlite-{dataset}.sqlite3")
    else:
        with pg_connect() as conn:
            schema = env["BENCH_PG_SCHEMA"]
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            conn.execute(f"CREATE SCHEMA {schema}")
        manage(env, "migrate", "--noinput", "-v0", timeout=None)
    seeded = run_python(env, "-m", "bench.seed", str(rows), timeout=None)
    info = json.loads(seeded.strip().splitlines()[-1])
    info["rows"] = rows
    info_path.write_text(json.dumps(info))
    log(
        f"{backend}/{dataset}: {info['groups']:,} groups ready in "
        f"{time.monotonic() - started:.0f} s (seeding {info['seconds']} s)"
    )
    return info


_template_lock = threading.Lock()
_template_done = False


def sqlite_template() -> Path:
    """A migrated, empty SQLite file, made once per run and copied for each data set."""
    global _template_done
    path = OUT / "sqlite-template.sqlite3"
    with _template_lock:
        if not _template_done:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            manage(server_env("sqlite", "template"), "migrate", "--noinput", "-v0", timeout=None)
            # Fold the WAL into the file, so that a plain copy is complete.
            with sqlite3.connect(path) as conn:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            _template_done = True
    return path

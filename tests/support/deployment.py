"""A Django project run as deployed, in subprocesses: its environment and ``manage.py``.

The live tests and the fault test run ``example_project`` with its own settings (not the
test settings), read from the environment as in production; the benchmark runs
``bench.site`` the same way. Nothing that configures the project leaks in from the
caller's environment.
"""

import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tests.support import HOST, ROOT

# Only the secret of these throwaway runs: servers started here never face the internet.
LIVE_SECRET_KEY = "usergroups-live-run-secret-key-0123456789-abcdefghijklmnopqr"
# Variables that configure the project under test: set here, never inherited.
PROJECT_VARIABLES = ("DJANGO_", "DATABASE_", "USERGROUPS_", "BENCH_PG_SCHEMA", "BENCH_TELEMETRY")


# The webhook settings of tests that run a real worker (through the project's environment
# variables): small timeouts and backoff, so that faults take seconds; attempts without
# limit, so that nothing is given up during them.
FAST_WEBHOOKS = {
    "DJANGO_WEBHOOK_ALLOW_PRIVATE": "true",
    "USERGROUPS_WEBHOOK_CONNECT_TIMEOUT_SECONDS": "0.5",
    "USERGROUPS_WEBHOOK_TIMEOUT_SECONDS": "0.8",
    "USERGROUPS_WEBHOOK_RETRY_BASE_SECONDS": "0.2",
    "USERGROUPS_WEBHOOK_RETRY_MAX_SECONDS": "1",
    "USERGROUPS_WEBHOOK_LEASE_SECONDS": "1.5",
    "USERGROUPS_WEBHOOK_MAX_ATTEMPTS": "100000",
    "USERGROUPS_WEBHOOK_DISABLE_AFTER_FAILURES": "100000",
    "USERGROUPS_LOG_LEVEL": "WARNING",
}


def server_env(
    database_url: str, settings: str = "example_project.settings", **overrides: str
) -> dict[str, str]:
    """The environment of a production-like project (``settings``) on ``database_url``;
    ``overrides`` replace or add variables (e.g. another ``DJANGO_SECRET_KEY``)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(PROJECT_VARIABLES)}
    env.update(
        DJANGO_SETTINGS_MODULE=settings,
        DATABASE_URL=database_url,
        DJANGO_SECRET_KEY=LIVE_SECRET_KEY,
        DJANGO_DEBUG="false",
        DJANGO_ALLOWED_HOSTS=HOST,
        # Production's default is true; the live tests mint with and without an origin.
        USERGROUPS_EMBED_REQUIRE_ORIGIN="false",
        PYTHONUNBUFFERED="1",
    )
    env.update(overrides)
    return env


def run_python(env: dict[str, str], *args: str, timeout: float | None = 120) -> str:
    """``python ARGS`` at the repository root in ``env``; its stdout. Raises on a
    non-zero exit, with the end of its stderr."""
    done = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(f"python {shlex.join(args)} failed:\n{done.stderr[-4000:]}")
    return done.stdout


def manage(env: dict[str, str], *args: str, timeout: float | None = 120) -> str:
    """``manage.py ARGS`` in a subprocess; its stdout. Raises on a non-zero exit."""
    return run_python(env, "manage.py", *args, timeout=timeout)


def migrated_site(database_url: str, workspace: str) -> tuple[dict[str, str], str]:
    """The environment of an example project on ``database_url``, migrated, and a new API
    key of ``workspace`` (made with ``create_api_key``, as a deployment would)."""
    env = server_env(database_url)
    manage(env, "migrate", "--noinput")
    return env, manage(env, "create_api_key", "--workspace", workspace).strip()


def database_url(settings_dict: dict[str, Any]) -> str:
    """The ``DATABASE_URL`` of a connection's database (``connection.settings_dict``),
    e.g. to run a process of the project on the test database pytest-django made."""
    if settings_dict["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{settings_dict['NAME']}"
    scheme = "postgres" if settings_dict["ENGINE"].endswith("postgresql") else "mysql"
    user = quote(settings_dict.get("USER") or "", safe="")
    if settings_dict.get("PASSWORD"):
        user += ":" + quote(settings_dict["PASSWORD"], safe="")
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = f":{settings_dict['PORT']}" if settings_dict.get("PORT") else ""
    return f"{scheme}://{user}@{host}{port}/{quote(settings_dict['NAME'], safe='')}"


class ManageProcess:
    """``manage.py ARGS`` running in its own process group, output to ``log``."""

    def __init__(self, env: dict[str, str], log: Path, *args: str) -> None:
        self.env, self.log, self.args = env, log, args
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", *self.args],
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.starts += 1

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, sig)
            self.process.wait(timeout=10)

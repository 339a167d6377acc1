"""A Django project run as deployed, in subprocesses: its environment and ``manage.py``.

The live tests and the fault test run ``example_project`` with its own settings (not the
test settings), read from the environment as in production; the benchmark runs
``bench.site`` the same way. Nothing that configures the project leaks in from the
caller's environment.
"""

import os
import shlex
import subprocess
import sys

from tests.support import HOST, ROOT

# Only the secret of these throwaway runs: servers started here never face the internet.
LIVE_SECRET_KEY = "usergroups-live-run-secret-key-0123456789-abcdefghijklmnopqr"
# Variables that configure the project under test: set here, never inherited.
PROJECT_VARIABLES = ("DJANGO_", "DATABASE_", "USERGROUPS_", "BENCH_PG_SCHEMA")


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

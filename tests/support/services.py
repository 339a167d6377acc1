"""Services outside Python that some tests need, and what happens when one is missing.

A test says what it needs with ``@pytest.mark.needs("redis")`` (tests/conftest.py acts on
the marker before the test's fixtures run). On a machine that lacks the service the test
is skipped with the reason, so ``make test`` passes with only Python and make. Under
``CI=true`` a missing service fails the test instead: ``.ci/run`` starts every service,
so one still missing is a broken CI machine, never a reason to run fewer tests.

Where each service is looked for comes from the environment, so a developer can point the
tests at their own (or at nothing, to see the skip):

- ``USERGROUPS_TEST_REDIS_URL``: default ``redis://127.0.0.1:6379/15``. Tests write only
  keys under a prefix of their own there (``unique_key_prefix()``) and never clear the
  database: it may be a developer's Redis, holding their data.
- ``USERGROUPS_E2E_CHROMIUM``: the browser's path, default ``/usr/bin/chromium``.
- ``postgresql``: the machine's PostgreSQL (tests/support/postgres.py), for the live tests
  that run a server on a database of their own there whatever ``DATABASE_URL`` says.
- ``pgbouncer``: Debian's ``pgbouncer`` on PATH (tests/support/pgbouncer.py starts one).
- ``npm``: ``node`` and ``npm`` (with ``npx``) on PATH, and the npm registry for
  ``npm ci`` (tests/test_embed_types.py type-checks embed.d.ts with TypeScript).
- ``prometheus``: Debian's ``prometheus`` on PATH (tests/support/prometheus.py starts one).
"""

import functools
import os
import shutil
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import pytest

REDIS_URL = os.environ.get("USERGROUPS_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
CHROMIUM = os.environ.get("USERGROUPS_E2E_CHROMIUM", "/usr/bin/chromium")


def _redis_missing() -> str | None:
    try:
        import redis
    except ImportError:
        return "the redis package is not installed (pip install -e '.[test]')"
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2, socket_timeout=2)
    try:
        client.ping()
    except redis.RedisError as error:
        return f"no Redis answers at {REDIS_URL} ({error}; USERGROUPS_TEST_REDIS_URL names another)"
    finally:
        client.close()
    return None


def _chromium_missing() -> str | None:
    if os.access(CHROMIUM, os.X_OK):
        return None
    return f"no Chromium at {CHROMIUM} (apt-get install chromium, or set USERGROUPS_E2E_CHROMIUM)"


def _postgresql_missing() -> str | None:
    from tests.support.postgres import ADDRESS

    try:
        socket.create_connection(ADDRESS, timeout=2).close()
    except OSError as error:
        return f"no PostgreSQL answers at {ADDRESS[0]}:{ADDRESS[1]} ({error})"
    return None


def _pgbouncer_missing() -> str | None:
    if shutil.which("pgbouncer"):
        return None
    return "no pgbouncer on PATH (apt-get install pgbouncer)"


def _npm_missing() -> str | None:
    absent = [tool for tool in ("node", "npm", "npx") if shutil.which(tool) is None]
    if not absent:
        return None
    return f"no {', '.join(absent)} on PATH (apt-get install nodejs npm)"


def _prometheus_missing() -> str | None:
    if shutil.which("prometheus"):
        return None
    return "no prometheus on PATH (apt-get install prometheus)"


_PROBES = {
    "redis": _redis_missing,
    "chromium": _chromium_missing,
    "postgresql": _postgresql_missing,
    "pgbouncer": _pgbouncer_missing,
    "npm": _npm_missing,
    "prometheus": _prometheus_missing,
}


@functools.cache
def missing(service: str) -> str | None:
    """Why ``service`` cannot be used here, or None when it can. Asked once per run."""
    return _PROBES[service]()


def require(service: str) -> None:
    """Skip the running test if ``service`` is missing; under CI=true, fail it."""
    if service not in _PROBES:
        raise ValueError(f"unknown service {service!r}; known: {', '.join(sorted(_PROBES))}")
    reason = missing(service)
    if reason is not None:
        unavailable(reason)


def unavailable(reason: str) -> NoReturn:
    """A test cannot run here: skipped with ``reason``; under CI=true, failed."""
    if os.environ.get("CI") == "true":
        pytest.fail(
            f"{reason}. CI=true: .ci/run starts this service, so it must be up.", pytrace=False
        )
    pytest.skip(reason)


def unique_key_prefix() -> str:
    """A cache KEY_PREFIX no other run or program uses, so a test touches only its own keys."""
    return f"usergroups-tests-{os.getpid()}-{uuid.uuid4().hex}"


@contextmanager
def shared_redis_cache() -> Iterator[dict[str, str]]:
    """A ``CACHES`` entry for the test Redis under a prefix of its own; its keys deleted
    after. Not the cache's ``clear()``: Django's Redis backend flushes the whole database
    there, another test's keys (a throttle's count mid-run, on another xdist worker)
    with them."""
    import redis

    prefix = unique_key_prefix()
    try:
        yield {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": prefix,
        }
    finally:
        with redis.Redis.from_url(REDIS_URL) as client:
            for key in client.scan_iter(match=f"{prefix}:*"):
                client.delete(key)

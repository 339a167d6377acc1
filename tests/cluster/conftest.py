"""The cluster tests: three app hosts behind HAProxy, on PgBouncer and Redis
(tests/support/cluster.py). Run by ``make cluster-test`` (``pytest -m cluster``), never by
``make test``: they need root, HAProxy and PgBouncer, and take minutes.

One cluster serves the whole session. What the tests measure (requests, faults, 5xx in
flight, throughput) is printed at the end of the run as the cluster's figures.
"""

import os
import shutil
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import services
from tests.support.cluster import REDIS, Cluster
from tests.support.postgres import ADDRESS

HERE = Path(__file__).resolve().parent
FIGURES: list[str] = []  # lines for the end of the run
TIME_LIMIT = 600  # seconds for the whole cluster session, whatever happens


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselected unless the run asks for them by marker (``-m cluster``)."""
    if "cluster" in (config.option.markexpr or ""):
        return
    mine = [item for item in items if HERE in item.path.parents]
    if mine:
        config.hook.pytest_deselected(items=mine)
        items[:] = [item for item in items if item not in mine]


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    if FIGURES:
        terminalreporter.section("cluster figures")
        for line in FIGURES:
            terminalreporter.write_line(line)


def _answers(address: tuple[str, int]) -> bool:
    try:
        socket.create_connection(address, timeout=2).close()
        return True
    except OSError:
        return False


def missing_parts() -> list[str]:
    missing = [f"{tool} (apt-get install {tool})" for tool in ("haproxy", "pgbouncer", "ip")]
    missing = [part for part in missing if not shutil.which(part.split()[0])]
    if os.geteuid() != 0:
        missing.append("root (network namespaces)")
    if not _answers(ADDRESS):
        missing.append(f"PostgreSQL at {ADDRESS[0]}:{ADDRESS[1]}")
    host, port = REDIS.split(":")
    if not _answers((host, int(port))):
        missing.append(f"Redis at {REDIS}")
    return missing


def _stop_the_run(signum: int, frame: object) -> None:
    """SIGALRM (over the time limit) or SIGTERM: an exception in the main thread, so the
    running test fails and the cluster's teardown runs (atexit would not, on a signal)."""
    raise RuntimeError(
        f"the cluster run took over {TIME_LIMIT} s" if signum == signal.SIGALRM else "terminated"
    )


@pytest.fixture(scope="session")
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    missing = missing_parts()
    if missing:
        services.unavailable(f"the cluster needs {', '.join(missing)}")
    signal.signal(signal.SIGALRM, _stop_the_run)
    signal.signal(signal.SIGTERM, _stop_the_run)
    signal.alarm(TIME_LIMIT)
    running = Cluster()
    try:
        running.start()
        FIGURES.append(
            f"cluster: {len(running.names)} hosts x {running.workers} gunicorn sync workers,"
            " HAProxy round robin, PgBouncer transaction mode, Redis cache"
        )
        yield running
    finally:
        failed = request.session.testsfailed > 0
        if failed:
            FIGURES.append(f"logs and configs kept in {running.workdir}")
        running.stop(keep_logs=failed)
        signal.alarm(0)


@pytest.fixture
def figures() -> list[str]:
    """Append lines to print with the cluster's figures at the end of the run."""
    return FIGURES

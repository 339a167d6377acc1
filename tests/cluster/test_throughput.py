"""Throughput of a get of an existing group: through HAProxy with one host and with three,
and one host without HAProxy on PgBouncer against direct PostgreSQL connections, with
persistent connections (CONN_MAX_AGE 60) and with a new one per request (0).

Short runs on a shared 2-core machine, taking turns (tests/support/throughput.py): the
figures are printed as they are, and the test asserts only that every run served without
errors (the hosts share the same cores, so three hosts are not expected to beat one here)."""

import contextlib

import pytest

from tests.support import HOST
from tests.support.cluster import DATABASE, PGBOUNCER_OPTIONS
from tests.support.deployment import server_env
from tests.support.gunicorn import Gunicorn
from tests.support.postgres import direct_url
from tests.support.throughput import available, interleaved, measure, table

pytestmark = pytest.mark.cluster

SECONDS = 5
BODY = {"user_group_id": "throughput"}


@pytest.fixture(scope="module")
def measured(cluster):
    if not available():
        pytest.fail("wrk is not installed (apt-get install wrk)", pytrace=False)
    assert cluster.call("GET", BODY)[0] == 200
    return cluster


def no_errors(results) -> bool:
    return all(
        r["errors"] == 0 and r["requests"] > 0 for rounds in results.values() for r in rounds
    )


def test_one_host_against_three_through_haproxy(measured, figures):
    haproxy, names = measured.haproxy, measured.names
    results = {
        "HAProxy, 1 host (2 workers), PgBouncer": [],
        "HAProxy, 3 hosts (2 workers each), PgBouncer": [],
    }
    try:
        for _ in range(2):
            for label, hosts in zip(results, (names[:1], names), strict=True):
                haproxy.only(hosts)
                results[label].append(measure(measured.base_url, measured.key, BODY, SECONDS))
    finally:
        haproxy.only(names)
    figures.append(
        f"throughput, get of an existing group, wrk 8 connections, 2 rounds of {SECONDS} s:"
    )
    figures.extend(table(results))
    assert no_errors(results), results


def test_pgbouncer_against_direct_connections(measured, figures, tmp_path):
    pgbouncer = f"{measured.pgbouncer.url(DATABASE, host=HOST)}?{PGBOUNCER_OPTIONS}"
    urls = {
        "1 host, direct PostgreSQL, CONN_MAX_AGE 60": direct_url(DATABASE),
        "1 host, PgBouncer, CONN_MAX_AGE 60": pgbouncer,
        "1 host, direct PostgreSQL, CONN_MAX_AGE 0": f"{direct_url(DATABASE)}?conn_max_age=0",
        "1 host, PgBouncer, CONN_MAX_AGE 0": f"{pgbouncer}&conn_max_age=0",
    }
    with contextlib.ExitStack() as stack:
        servers = {
            label: stack.enter_context(
                Gunicorn(server_env(url), tmp_path / f"{n}.log", 2, "--max-requests", "0")
            )
            for n, (label, url) in enumerate(urls.items())
        }
        results = interleaved(
            {label: (server.base_url, measured.key) for label, server in servers.items()},
            BODY,
            SECONDS - 1,
        )
    figures.append(
        f"PgBouncer against direct connections, no HAProxy, 2 rounds of {SECONDS - 1} s:"
    )
    figures.extend(table(results))
    assert no_errors(results), results

"""Faults during a 60 s mixed load through HAProxy (create, get, rotate, update, delete, and
embed tokens minted and verified when the API has them): one host's gunicorn master
killed with SIGKILL and brought back, PgBouncer restarted, PostgreSQL's backends
terminated. Afterwards the ledger of acknowledged writes is compared with the database
(tests/support/ledger.py): nothing lost, nothing doubled, and a 5xx only for a request in
flight at a fault."""

import collections
import time

import pytest

from tests.support.ledger import Fault, check_stored, failed, failures_outside, summarize
from tests.support.load import EMBED_PATH, MAX_RETRIES, REQUEST_TIMEOUT, LoadClient
from tests.support.postgres import stored_groups, terminate_backends

pytestmark = pytest.mark.cluster

SECONDS = 60
CLIENTS = 6
MIX = {"get": 3, "rotate": 2, "update": 2, "delete": 1}


def embed_available(cluster) -> bool:
    """Embed tokens (contract section 6) are served: an unknown group is the API's JSON
    404, not Django's page for a URL it does not know."""
    _, body, _ = cluster.call("POST", {"user_group_id": "no-such-group"}, path=EMBED_PATH)
    return "raw" not in body


def restart_host(cluster, index):
    cluster.kill_master(index)
    cluster.bring_back(index)


def inject(faults, t0, what, action):
    start = time.monotonic() - t0
    detail = action()
    faults.append(Fault(f"{what}{detail or ''}", start, time.monotonic() - t0))


def test_no_acknowledged_write_is_lost_or_doubled_under_faults(cluster, figures):
    mix = {**MIX, "embed": 1} if embed_available(cluster) else MIX
    t0 = time.monotonic()
    deadline = t0 + SECONDS
    run_id = f"{int(time.time())}"
    clients = [
        LoadClient(i, cluster.address, cluster.key, deadline, t0, run_id, mix, "X-Served-By")
        for i in range(CLIENTS)
    ]
    for client in clients:
        client.start()
    faults: list[Fault] = []
    time.sleep(SECONDS * 0.2)
    inject(
        faults,
        t0,
        "kill -9 of h2's gunicorn master, then its restart",
        lambda: restart_host(cluster, 1),
    )
    time.sleep(SECONDS * 0.2)
    inject(faults, t0, "PgBouncer restarted", cluster.pgbouncer.restart)
    time.sleep(SECONDS * 0.2)
    inject(
        faults,
        t0,
        "pg_terminate_backend",
        lambda: f" of {terminate_backends('h_g_cluster')} connections",
    )
    for client in clients:
        client.join(timeout=SECONDS + REQUEST_TIMEOUT * MAX_RETRIES)
    assert not [client.name for client in clients if client.is_alive()], "clients hung"

    calls = sorted((c for client in clients for c in client.calls), key=lambda c: c.start)
    chains = [chain for client in clients for chain in client.chains]
    stored = stored_groups("h_g_cluster", "cluster", f"load-{run_id}-")
    violations = [error for client in clients for error in client.errors]
    violations += check_stored(chains, stored)
    outside = failures_outside(calls, faults)

    ops = collections.Counter(c.op for c in calls)
    hosts = collections.Counter(c.host for c in calls if c.host)
    told = [chain for chain in chains if chain.created_seen]
    figures.append(
        f"faults: {SECONDS} s of load from {CLIENTS} clients, {len(calls)} requests"
        f" ({', '.join(f'{op} {n}' for op, n in sorted(ops.items()))}); by host {dict(sorted(hosts.items()))}"
    )
    for fault in faults:
        in_flight = [c for c in calls if fault.overlaps(c)]
        bad = collections.Counter(c.outcome for c in in_flight if failed(c))
        figures.append(
            f"  t={fault.start:4.1f}-{fault.end:4.1f} s {fault.what}: {sum(bad.values())} failed"
            f" ({', '.join(f'{o}×{n}' for o, n in sorted(bad.items())) or 'none'})"
            f" of {len(in_flight)} requests in flight then or within 2 s"
        )
    figures.append(summarize("all requests", calls))
    figures.append(
        f"  ledger: {len(told)} groups told created, {sum(c.deleted for c in told)} deleted,"
        f" {sum(len(c.tokens) - 1 for c in told)} rotations answered 200;"
        f" {len(stored)} groups stored; {len(violations)} violations;"
        f" {len(outside)} failures outside a fault; retries {sum(c.retries for c in clients)}"
    )
    assert set(hosts) == set(cluster.names), hosts
    assert not violations, violations[:20]
    assert not outside, outside[:20]
    assert all(not failed(c) for c in calls if c.start > faults[-1].end + 3)

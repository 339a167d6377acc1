"""Embed tokens across hosts (contract section 6): a revocation through one host is
refused at once by every other one, and a mint racing a revoke never gives a token that
outlives the revoke it was minted before.

Hosts are addressed one by one here (past HAProxy), to know which host says what."""

import threading
import time
import uuid

import psycopg
import pytest

from tests.support.cluster import DATABASE
from tests.support.concurrency import run_together
from tests.support.postgres import ADMIN_URL, listening_backends

pytestmark = pytest.mark.cluster

MINT = "/api/user/embed-token"
REVOKE = f"{MINT}/revoke"
INTROSPECT = f"{MINT}/introspect"
SALES = "/embed/api/sales/"


def new_group(cluster) -> str:
    provided_id = f"embed-{uuid.uuid4().hex[:12]}"
    assert cluster.call("GET", {"user_group_id": provided_id})[0] == 200
    return provided_id


def mint(cluster, provided_id: str, host: int) -> str:
    status, body = cluster.call_host(host, "POST", {"user_group_id": provided_id}, MINT)
    assert status == 200, body
    return body["embed_token"]


def active_on_each_host(cluster, token: str) -> list[bool]:
    answers = [
        cluster.call_host(i, "POST", {"embed_token": token}, INTROSPECT)
        for i in range(len(cluster.names))
    ]
    assert all(status == 200 for status, _ in answers), answers
    return [body["active"] for _, body in answers]


def test_a_revoke_through_one_host_is_refused_at_once_by_the_others(cluster):
    provided_id = new_group(cluster)
    token = mint(cluster, provided_id, host=0)
    assert active_on_each_host(cluster, token) == [True, True, True]
    status, body = cluster.call_host(1, "POST", {"user_group_id": provided_id}, REVOKE)
    assert status == 200, body
    assert active_on_each_host(cluster, token) == [False, False, False]

    # Minted afterwards: works everywhere, until a rotation through another host.
    token = mint(cluster, provided_id, host=2)
    assert active_on_each_host(cluster, token) == [True, True, True]
    status, group, _ = cluster.call("GET", {"user_group_id": provided_id})
    current = group["user_group"]["token"]
    assert cluster.call_host(0, "POST", {"current_token": current})[0] == 200
    assert active_on_each_host(cluster, token) == [False, False, False]


def test_the_example_data_endpoint_refuses_a_revoked_token_on_every_host(cluster):
    """``/embed/api/sales/`` of the example project, with ``Authorization: Embed``."""
    provided_id = new_group(cluster)
    token = mint(cluster, provided_id, host=0)
    hosts = range(len(cluster.names))
    # Accepted: the data (200), or 422 for a group with no sales data source; never 401.
    before = [cluster.call_host(i, "GET", None, SALES, f"Embed {token}")[0] for i in hosts]
    assert all(status in (200, 422) for status in before), before
    assert cluster.call_host(1, "POST", {"user_group_id": provided_id}, REVOKE)[0] == 200
    after = [cluster.call_host(i, "GET", None, SALES, f"Embed {token}")[0] for i in hosts]
    assert after == [401, 401, 401]


def test_a_mint_racing_a_revoke(cluster):
    """Seven clients mint three tokens each while one revokes. A token whose mint had
    answered before the revoke was sent is dead; one minted after the revoke answered
    works; every host agrees on each token."""
    for _round in range(3):
        provided_id = new_group(cluster)

        def act(i: int, provided_id=provided_id) -> list[tuple[float, float, int, str]]:
            done = []
            if i == 0:
                time.sleep(0.05)  # some mints answer first
                start = time.monotonic()
                status, _, _ = cluster.call("POST", {"user_group_id": provided_id}, REVOKE)
                return [(start, time.monotonic(), status, "")]
            for _ in range(3):
                start = time.monotonic()
                status, body, _ = cluster.call("POST", {"user_group_id": provided_id}, MINT)
                done.append((start, time.monotonic(), status, body.get("embed_token", "")))
            return done

        results = run_together(8, act)
        ((revoke_start, revoke_end, revoke_status, _),) = results[0]
        assert revoke_status == 200
        mints = [call for calls in results[1:] for call in calls]
        assert all(status == 200 for _, _, status, _ in mints), mints
        for start, end, _, token in mints:
            active = active_on_each_host(cluster, token)
            assert len(set(active)) == 1, f"the hosts disagree: {active}"
            if end < revoke_start:
                assert active == [False] * 3, "minted before the revoke, still active"
            elif start > revoke_end:
                assert active == [True] * 3, "minted after the revoke, refused"
        after = mint(cluster, provided_id, host=2)
        assert active_on_each_host(cluster, after) == [True, True, True]


def test_revocations_hold_while_the_listening_connections_are_killed(cluster, figures):
    """The read model's fault (CONTRACT section 9): every host's workers listen directly
    to PostgreSQL, past PgBouncer. Under a load of token uses, every listening connection
    is terminated, then a token is revoked through one host: no host serves it, and the
    listeners come back."""
    hosts = range(len(cluster.names))
    workers = len(cluster.names) * cluster.workers
    deadline = time.monotonic() + 30
    while len(listening_backends(DATABASE)) < workers and time.monotonic() < deadline:
        for i in hosts:  # a worker listens from its first read of a key on
            cluster.call_host(i, "GET", {"user_group_id": "listening"})
    assert len(listening_backends(DATABASE)) == workers
    stop = threading.Event()
    served_after: list[int] = []
    uses = 0

    def load(token: str, revoked: threading.Event) -> None:
        nonlocal uses
        while not stop.is_set():
            for i in hosts:
                answered = revoked.is_set()
                status = cluster.call_host(i, "GET", None, SALES, f"Embed {token}")[0]
                uses += 1
                if answered and status != 401:
                    served_after.append(status)

    rounds, killed = 5, 0
    for _ in range(rounds):
        provided_id = new_group(cluster)
        token = mint(cluster, provided_id, host=0)
        revoked = threading.Event()
        stop.clear()
        loader = threading.Thread(target=load, args=(token, revoked))
        loader.start()
        time.sleep(0.5)
        with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
            for pid in listening_backends(DATABASE):
                killed += admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]
        status, body = cluster.call_host(1, "POST", {"user_group_id": provided_id}, REVOKE)
        assert status == 200, body
        revoked.set()
        time.sleep(1.0)
        stop.set()
        loader.join(30)
    deadline = time.monotonic() + 30
    while len(listening_backends(DATABASE)) < workers and time.monotonic() < deadline:
        for i in hosts:
            cluster.call_host(i, "GET", {"user_group_id": "listening"})
        time.sleep(0.2)
    figures.append(
        f"read model: {killed} listening connections killed over {rounds} revocations under"
        f" {uses} token uses; {len(served_after)} served after a revocation's answer"
    )
    assert served_after == []
    assert len(listening_backends(DATABASE)) == workers

"""The read model under gunicorn (CONTRACT section 9): several worker processes, each
remembering what it verified, and a revocation that must hold on every one of them at
once, many times over, whoever writes it.

The example project runs as deployed (its own settings, ``WORKERS`` sync workers,
persistent connections) on a PostgreSQL database of its own. Each round mints a token,
uses it until every worker has answered it from memory (``WARM`` uses, spread over the
workers by the kernel), revokes it, and uses it ``AFTER`` more times: none may be served.

Loopback only; bounded (``ROUNDS`` rounds, request timeouts).
"""

import secrets
import tempfile
import time
from pathlib import Path

import psycopg
import pytest

from tests.support.deployment import migrated_site
from tests.support.gunicorn import Gunicorn
from tests.support.http import call_api, exchange
from tests.support.postgres import (
    direct_url,
    drop_database,
    listening_backends,
    recreate_database,
)

pytestmark = [pytest.mark.live, pytest.mark.needs("postgresql")]

WORKERS = 3
ROUNDS = 15
WARM = 30  # uses before the revocation: every worker has the token in memory
AFTER = 30  # uses after it: every one refused
EMBED = "/api/user/embed-token"
#: How long a write made outside the app may take to be in force (CONTRACT section 9).
OUTSIDE_WRITE_SECONDS = 0.1


@pytest.fixture(scope="module")
def server():
    database = f"usergroups_read_model_{secrets.token_hex(4)}"
    recreate_database(database)
    env, key = migrated_site(direct_url(database), "live")
    log = Path(tempfile.mkdtemp()) / "gunicorn.log"
    gunicorn = Gunicorn(env, log, WORKERS).start()
    try:
        yield gunicorn, key, database
    finally:
        gunicorn.stop()
        drop_database(database)


def use(base_url: str, token: str) -> int:
    """The status of the example's host view for ``token``: 401 when it is refused (a
    group without sales data is 422, after its token passed)."""
    status, _body, _headers = exchange(
        base_url, "GET", None, f"Embed {token}", path="/embed/api/sales/"
    )
    return status


def mint(base_url: str, key: str, group: str) -> str:
    status, body = call_api(base_url, key, "GET", {"user_group_id": group})
    assert status in (200, 201), body
    status, body = call_api(base_url, key, "POST", {"user_group_id": group}, path=EMBED)
    assert status == 200, body
    return body["embed_token"]


def served_after_revocations(server, name: str, revoke) -> int:
    """``ROUNDS`` times: a new token, used until every worker holds it, ``revoke(group)``,
    then ``AFTER`` uses; how many of those were served."""
    gunicorn, key, _database = server
    served = 0
    for round_ in range(ROUNDS):
        group = f"{name}-{round_}"
        token = mint(gunicorn.base_url, key, group)
        assert all(use(gunicorn.base_url, token) != 401 for _ in range(WARM))
        revoke(group)
        served += sum(use(gunicorn.base_url, token) != 401 for _ in range(AFTER))
    return served


def test_a_revocation_through_the_api_holds_on_every_worker_at_once(server):
    gunicorn, key, database = server

    def revoke(group: str) -> None:
        body = {"user_group_id": group}
        status, answer = call_api(gunicorn.base_url, key, "POST", body, path=f"{EMBED}/revoke")
        assert status == 200, answer

    assert served_after_revocations(server, "api", revoke) == 0
    assert (
        len(listening_backends(database)) == WORKERS
    )  # each worker heard, on a connection of its own


def test_sql_typed_by_an_operator_holds_on_every_worker_within_the_bound(server):
    _gunicorn, _key, database = server
    url = direct_url(database).replace("postgres://", "postgresql://")

    def revoke(group: str) -> None:
        with psycopg.connect(url, autocommit=True) as operator:
            operator.execute(
                "UPDATE usergroups_usergroup SET embed_generation = embed_generation + 1"
                " WHERE provided_id = %s",
                (group,),
            )
        time.sleep(OUTSIDE_WRITE_SECONDS)

    assert served_after_revocations(server, "sql", revoke) == 0

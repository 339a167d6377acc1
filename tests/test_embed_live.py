"""Embed tokens on a real server with several worker processes: every worker derives the
same signing key, and a revocation on one is seen at once by all (the generation lives
in the database, not in any process)."""

import json
import urllib.request

import jwt
import pytest

from tests.support.deployment import migrated_site
from tests.support.gunicorn import Gunicorn
from tests.support.http import call_api
from tests.support.leaks import SECRET_SHAPE

pytestmark = pytest.mark.live

WORKERS = 3
ROUNDS = 12  # requests per check: with 3 workers, each is all but sure to answer some


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("embed-live")
    env, key = migrated_site(f"sqlite:///{tmp / 'db.sqlite3'}", "embed")
    gunicorn = Gunicorn(env, tmp / "gunicorn.log", WORKERS)
    with gunicorn:
        gunicorn.key = key
        yield gunicorn
    log = gunicorn.log()
    assert "Traceback" not in log, log[-5000:]
    assert not SECRET_SHAPE.search(log), "the server logged a key or a token"


def api(server, path, body, method="POST"):
    return call_api(server.base_url, server.key, method, body, path=path, timeout=20)


def mint(server, user_group_id):
    status, answer = api(server, "/api/user/embed-token", {"user_group_id": user_group_id})
    assert status == 200, answer
    return answer["embed_token"]


def active(server, token) -> set[bool]:
    """What every one of :data:`ROUNDS` introspections says."""
    answers = [
        api(server, "/api/user/embed-token/introspect", {"embed_token": token})
        for _ in range(ROUNDS)
    ]
    assert {status for status, _ in answers} == {200}
    return {answer["active"] for _, answer in answers}


def test_every_worker_signs_with_one_key_and_publishes_it(server):
    status, group = api(server, "/api/user", {"user_group_id": "one-key"}, method="GET")
    assert status == 200
    kids = {jwt.get_unverified_header(mint(server, "one-key"))["kid"] for _ in range(ROUNDS)}
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    sets = set()
    for _ in range(ROUNDS):
        with opener.open(f"{server.base_url}/api/user/embed-token/jwks", timeout=20) as answer:
            sets.add(json.dumps(json.loads(answer.read()), sort_keys=True))
    [published] = sets
    assert len(kids) == 1 and kids == {key["kid"] for key in json.loads(published)["keys"]}


def test_a_revoke_is_seen_by_every_worker_at_once(server):
    api(server, "/api/user", {"user_group_id": "revoked-live"}, method="GET")
    tokens = [mint(server, "revoked-live") for _ in range(3)]
    assert all(active(server, token) == {True} for token in tokens)
    status, _ = api(server, "/api/user/embed-token/revoke", {"user_group_id": "revoked-live"})
    assert status == 200
    assert all(active(server, token) == {False} for token in tokens)
    assert active(server, mint(server, "revoked-live")) == {True}


def test_a_rotation_is_seen_by_every_worker_at_once(server):
    status, answer = api(server, "/api/user", {"user_group_id": "rotated-live"}, method="GET")
    token = mint(server, "rotated-live")
    assert active(server, token) == {True}
    status, _ = api(server, "/api/user", {"current_token": answer["user_group"]["token"]})
    assert status == 200
    assert active(server, token) == {False}

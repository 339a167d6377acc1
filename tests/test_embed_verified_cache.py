"""The per-process memory of checked signatures (usergroups.embed.verified): a token seen
before skips only the signature check; everything else is checked on every request."""

import base64
import json
from unittest import mock

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519
from django.test import override_settings

from tests.support.api import assert_error
from tests.support.embed import clock_moved, dashboard, minted, revoke
from usergroups.embed import keys, tokens, verified
from usergroups.embed.verified import VerifiedSignatures

OLD_SECRET = "o" * 50
NEW_SECRET = "n" * 50


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@pytest.fixture(autouse=True)
def fresh_memory():
    verified.signatures.clear()
    yield
    verified.signatures.clear()


@pytest.fixture
def token(api_client, group):
    return minted(api_client, group.provided_id)


@pytest.fixture
def checks():
    """Counts the signature checks that really run."""
    with mock.patch.object(tokens, "_decoded", wraps=tokens._decoded) as spy:
        yield spy


def test_a_token_seen_before_skips_only_the_signature_check(
    token, checks, django_assert_num_queries
):
    for _ in range(3):
        with django_assert_num_queries(1):  # the group's generation, every time
            assert dashboard(token).status_code == 200
    assert checks.call_count == 1
    assert verified.digest(token) in verified.signatures._entries


def test_the_memory_holds_digests_never_tokens(token):
    dashboard(token)
    remembered = list(verified.signatures._entries)
    assert remembered == [verified.digest(token)]
    assert all(token.encode() not in entry and len(entry) == 32 for entry in remembered)


def test_a_forged_token_with_the_same_claims_is_refused(token, checks):
    assert dashboard(token).status_code == 200
    head, payload, _signature = token.split(".")
    forger = ed25519.Ed25519PrivateKey.generate()
    forged = f"{head}.{payload}.{b64(forger.sign(f'{head}.{payload}'.encode()))}"
    assert_error(dashboard(forged), 401, "authentication_failed")
    assert_error(dashboard(forged), 401, "authentication_failed")
    assert checks.call_count == 3  # the forgery is checked each time, never remembered
    assert verified.digest(forged) not in verified.signatures._entries


def test_a_tampered_token_is_refused_after_the_genuine_one_is_remembered(token):
    assert dashboard(token).status_code == 200
    head, payload, signature = token.split(".")
    claims = json.loads(unb64(payload))
    longer = b64(json.dumps({**claims, "exp": claims["exp"] + 3600}).encode())
    assert_error(dashboard(f"{head}.{longer}.{signature}"), 401, "authentication_failed")
    flipped = signature[:-2] + ("A" if signature[-2] != "A" else "B") + signature[-1]
    assert_error(dashboard(f"{head}.{payload}.{flipped}"), 401, "authentication_failed")
    assert dashboard(token).status_code == 200


def test_a_remembered_token_expires_with_the_clock(api_client, group, django_assert_num_queries):
    token = minted(api_client, group.provided_id, expires_in=60)
    assert dashboard(token).status_code == 200
    with clock_moved(61), django_assert_num_queries(0):
        assert_error(dashboard(token), 401, "token_expired")
    assert verified.digest(token) not in verified.signatures._entries


def test_a_remembered_token_is_revoked_at_once(api_client, group, token):
    assert dashboard(token).status_code == 200
    assert revoke(api_client, {"user_group_id": group.provided_id}).status_code == 200
    assert_error(dashboard(token), 401, "authentication_failed")


def test_a_rotation_that_drops_the_key_drops_what_it_verified(api_client, group):
    with override_settings(SECRET_KEY=OLD_SECRET):
        token = minted(api_client, group.provided_id)
    with override_settings(SECRET_KEY=NEW_SECRET, SECRET_KEY_FALLBACKS=[OLD_SECRET]):
        assert dashboard(token).status_code == 200
        assert len(verified.signatures) == 1
    with override_settings(SECRET_KEY=NEW_SECRET, SECRET_KEY_FALLBACKS=[]):
        assert_error(dashboard(token), 401, "authentication_failed")
        assert len(verified.signatures) == 0


def test_another_audience_refuses_a_remembered_token(token):
    assert dashboard(token).status_code == 200
    with override_settings(USERGROUPS={"EMBED_TOKEN_AUDIENCE": "another"}):
        assert_error(dashboard(token), 401, "authentication_failed")


def test_the_memory_is_bounded_least_recently_used_first_out():
    ring = [keys.derived_key(NEW_SECRET)]
    memory = VerifiedSignatures(size=3)
    for name in (b"a", b"b", b"c"):
        memory.remember(name, ring)
    assert memory.holds(b"a", ring)  # now the most recently used
    memory.remember(b"d", ring)
    assert len(memory) == 3
    assert not memory.holds(b"b", ring)
    assert all(memory.holds(name, ring) for name in (b"a", b"c", b"d"))


def test_the_memory_holds_only_for_the_same_key_objects():
    ring = [keys.derived_key(NEW_SECRET)]
    memory = VerifiedSignatures()
    memory.remember(b"a", ring)
    assert memory.holds(b"a", list(ring))
    assert not memory.holds(b"a", [keys.derived_key(OLD_SECRET)])
    assert not memory.holds(b"a", ring)  # dropped with the change, not kept aside

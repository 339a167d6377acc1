"""The session-wide log guard of tests/conftest.py can fail, and is on for the whole run.

Fake secrets are logged only to a logger of this module that does not propagate, with
its own guard: the session's guard never sees them, so the run stays green.
"""

import logging
import time

import pytest

from tests.support.leaks import secrets_in
from tests.support.log_guard import SecretLogGuard
from usergroups import crypto
from usergroups.embed import tokens


@pytest.fixture
def isolated():
    """A logger whose records reach only a guard of its own."""
    logger = logging.getLogger(f"{__name__}.isolated")
    logger.propagate = False
    guard = SecretLogGuard()
    logger.addHandler(guard)
    logger.setLevel(logging.DEBUG)
    try:
        yield logger, guard
    finally:
        logger.removeHandler(guard)


def test_the_detector_finds_keys_and_tokens():
    key, token = crypto.new_api_key(), crypto.new_group_token()
    assert secrets_in(f"key={key} token={token}.") == [key, token]
    assert secrets_in(f"Authorization: Token {key}") == [key]


def embed_token():
    return tokens.sign(
        team_id=7,
        user_group_id="acme",
        binding=tokens.Binding(
            workspace_id=1, workspace_generation=0, group_binding="b", group_generation=0
        ),
        issued_at=int(time.time()),
        expires_in=60,
    )


def test_the_detector_finds_embed_tokens():
    token = embed_token()
    assert secrets_in(f"Authorization: Embed {token}") == [token]
    assert secrets_in(f'{{"embed_token": "{token}"}}') == [token]
    head, payload, _signature = token.split(".")
    assert secrets_in(f"unsigned {head}.{payload} seen") == [f"{head}.{payload}"]


def test_an_embed_token_in_a_log_record_fails_the_check(isolated):
    logger, guard = isolated
    token = embed_token()
    logger.info("minted %s", token)
    assert len(guard.leaks) == 1 and token not in guard.leaks[0]
    with pytest.raises(pytest.fail.Exception, match="1 of 1 log records"):
        guard.check()


@pytest.mark.parametrize(
    "text",
    [
        "Minted an embed token for user group team_id=7",
        '{"alg": "EdDSA"} eyJhbGciOiJFZERTQSJ9',  # a header alone is public
        "Refused revoked API key ugk_AbCdEfGh",  # a key named by its prefix
        "Rotated the token of user group team_id=7",
        "ugt_" + "A" * 42,  # one character short
        "ugx_" + "A" * 43,
    ],
)
def test_the_detector_passes_what_may_be_logged(text):
    assert secrets_in(text) == []


def test_a_logged_secret_fails_the_check(isolated):
    logger, guard = isolated
    token = crypto.new_group_token()
    logger.info("innocent")
    logger.warning("rotated to %s", token)
    assert guard.checked == 2
    assert len(guard.leaks) == 1
    assert token not in guard.leaks[0]  # the report names the leak without repeating it
    with pytest.raises(pytest.fail.Exception, match="1 of 2 log records"):
        guard.check()


def test_a_secret_in_a_traceback_fails_the_check(isolated):
    logger, guard = isolated
    try:
        raise ValueError(f"bad key {crypto.new_api_key()}")
    except ValueError:
        logger.exception("request failed")
    with pytest.raises(pytest.fail.Exception):
        guard.check()


def test_the_session_guard_sees_the_app_logs(no_secret_in_any_log_record):
    guard = no_secret_in_any_log_record
    assert guard in logging.root.handlers
    before = guard.checked
    logging.getLogger("usergroups.services").debug("a debug record of the app")
    assert guard.checked == before + 1
    assert guard.leaks == []

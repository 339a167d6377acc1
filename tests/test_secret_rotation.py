"""Rotating the secret that seals group tokens (SECRET_KEY, or USERGROUPS["TOKEN_SECRET"]).

Tokens are looked up by digest, which no secret touches, so they keep working through
any change of secret. Only showing a token again (get-or-create) needs the secret it
was sealed with: a fallback keeps that working until ``reseal_group_tokens`` has
resealed everything with the new secret; a dropped secret makes get-or-create answer
503 ``token_unavailable`` until the group's token is rotated.
"""

import io
from contextlib import contextmanager

import pytest
from django.core.management import call_command
from django.test import override_settings

from tests.support.api import get_or_create, rotate, status_and_body
from usergroups import crypto
from usergroups.auth.group_token import resolve_group_token
from usergroups.models import UserGroup

OLD_KEY = "usergroups-old-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz"
ACME = {"user_group_id": "acme"}
NEW_KEY = "usergroups-new-secret-key-9876543210-zyxwvutsrqponmlkjihgfedcba"


@contextmanager
def django_secret(current, fallbacks=()):
    with override_settings(SECRET_KEY=current, SECRET_KEY_FALLBACKS=list(fallbacks)):
        yield


@contextmanager
def token_secret(current, fallbacks=()):
    # SECRET_KEY changes too, to show that a TOKEN_SECRET makes SECRET_KEY irrelevant.
    with override_settings(
        SECRET_KEY=f"unrelated-{current}-{len(fallbacks)}-" + "k" * 40,
        SECRET_KEY_FALLBACKS=[],
        USERGROUPS={"TOKEN_SECRET": current, "TOKEN_SECRET_FALLBACKS": list(fallbacks)},
    ):
        yield


SCHEMES = {
    "SECRET_KEY": (django_secret, OLD_KEY, NEW_KEY),
    "TOKEN_SECRET": (token_secret, "old-token-secret-" + "o" * 40, "new-token-secret-" + "n" * 40),
}


@pytest.fixture(params=sorted(SCHEMES))
def scheme(request):
    """``(secret, old, new)``: ``secret(current, fallbacks)`` is a settings context."""
    return SCHEMES[request.param]


def reseal() -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("reseal_group_tokens", stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def created_under(client, secret, old, user_group_id="acme"):
    with secret(old):
        status, body = status_and_body(get_or_create(client, {"user_group_id": user_group_id}))
    assert status == 200 and body["new_user_group"] is True, body
    return body["user_group"]["token"]


@pytest.mark.django_db
def test_old_secret_as_fallback_keeps_tokens_showing_and_rotating(api_client, scheme):
    secret, old, new = scheme
    token = created_under(api_client, secret, old)
    other = created_under(api_client, secret, old, "globex")

    with secret(new, [old]):
        status, body = status_and_body(get_or_create(api_client, ACME))
        assert (status, body["new_user_group"]) == (200, False)
        assert body["user_group"]["token"] == token
        status, body = status_and_body(rotate(api_client, {"current_token": token}))
        assert status == 200, body
        rotated = body["user_group"]["token"]
        assert rotated != token
        assert get_or_create(api_client, ACME).json()["user_group"]["token"] == rotated
        assert rotate(api_client, {"current_token": token}).status_code == 404

    # The rotated token was sealed with the new secret: it needs no fallback.
    with secret(new):
        assert get_or_create(api_client, ACME).json()["user_group"]["token"] == rotated
        # The untouched group still holds an old seal until resealed.
        status, body = status_and_body(get_or_create(api_client, {"user_group_id": "globex"}))
        assert (status, body["error"]["code"]) == (503, "token_unavailable")
    with secret(new, [old]):
        assert (
            get_or_create(api_client, {"user_group_id": "globex"}).json()["user_group"]["token"]
            == other
        )


@pytest.mark.django_db
def test_reseal_moves_every_token_to_the_new_secret(api_client, scheme):
    secret, old, new = scheme
    tokens = {name: created_under(api_client, secret, old, name) for name in ("a", "b", "c")}
    sealed_before = dict(UserGroup.objects.values_list("provided_id", "token_sealed"))
    digests_before = dict(UserGroup.objects.values_list("provided_id", "token_digest"))

    with secret(new, [old]):
        out, err = reseal()
    assert out == "Resealed 3 group token(s).\n"
    assert err == ""
    sealed_after = dict(UserGroup.objects.values_list("provided_id", "token_sealed"))
    assert all(sealed_after[name] != sealed_before[name] for name in tokens)
    assert dict(UserGroup.objects.values_list("provided_id", "token_digest")) == digests_before

    with secret(new):
        for name, token in tokens.items():
            status, body = status_and_body(get_or_create(api_client, {"user_group_id": name}))
            assert (status, body["user_group"]["token"]) == (200, token)
        # Resealing again changes nothing.
        assert reseal() == ("Resealed 0 group token(s).\n", "")
    # And the old secret alone no longer opens them.
    with secret(old):
        status, body = status_and_body(get_or_create(api_client, {"user_group_id": "a"}))
        assert (status, body["error"]["code"]) == (503, "token_unavailable")


@pytest.mark.django_db
def test_dropped_secret_is_a_clear_error_and_rotation_recovers(api_client, scheme):
    secret, old, new = scheme
    token = created_under(api_client, secret, old)
    before = UserGroup.objects.values().get()

    with secret(new):
        status, body = status_and_body(get_or_create(api_client, ACME))
        assert status == 503
        assert body["success"] == 0
        assert body["error"]["code"] == "token_unavailable"
        assert body["error"]["message"]
        assert "user_group" not in body
        # Nothing changed, nothing was created.
        assert UserGroup.objects.values().get() == before

        # Rotation finds the group by the token's digest: it needs no unsealing.
        assert resolve_group_token(token).provided_id == "acme"
        status, body = status_and_body(rotate(api_client, {"current_token": token}))
        assert status == 200, body
        new_token = body["user_group"]["token"]
        assert new_token != token
        status, body = status_and_body(get_or_create(api_client, ACME))
        assert (status, body["user_group"]["token"]) == (200, new_token)
        assert resolve_group_token(token) is None


@pytest.mark.django_db
def test_reseal_reports_tokens_it_cannot_open(api_client, scheme):
    secret, old, new = scheme
    created_under(api_client, secret, old, "lost")
    with secret(new):
        created_under(api_client, secret, new, "kept")
        out, err = reseal()
    assert out == "Resealed 0 group token(s).\n"
    assert "1 group token(s) open with no configured secret" in err
    # Nothing was overwritten: the old secret still opens the lost one.
    with secret(old):
        assert get_or_create(api_client, {"user_group_id": "lost"}).status_code == 200


@pytest.mark.django_db
def test_lookups_by_digest_never_depend_on_the_secret(group, scheme):
    secret, old, new = scheme
    token = group.token  # sealed under the test settings' SECRET_KEY
    with secret(new):
        assert UserGroup.objects.get(pk=group.pk).token is None
        assert resolve_group_token(token).team_id == group.pk
        assert UserGroup.objects.filter(token_digest=crypto.digest(token)).get().pk == group.pk
    with secret(old):
        assert resolve_group_token(token).team_id == group.pk


@pytest.mark.django_db
def test_api_keys_do_not_depend_on_the_secret(api_client, scheme):
    secret, old, new = scheme
    for current in (old, new):
        with secret(current):
            assert (
                get_or_create(api_client, {"user_group_id": f"key-check-{current}"}).status_code
                == 200
            )


def test_token_secret_wins_over_secret_key():
    dedicated = "dedicated-" + "d" * 40
    token = crypto.new_group_token()
    token_digest = crypto.digest(token)
    with override_settings(USERGROUPS={"TOKEN_SECRET": dedicated}):
        assert crypto.token_secrets() == [dedicated]
        sealed = crypto.seal_token(token, token_digest)
        # Changing SECRET_KEY does not matter while TOKEN_SECRET is set.
        with override_settings(SECRET_KEY=NEW_KEY, SECRET_KEY_FALLBACKS=[]):
            assert crypto.unseal_token(sealed, token_digest) == token
    # Without TOKEN_SECRET, SECRET_KEY seals, and does not open what TOKEN_SECRET sealed.
    assert crypto.unseal_token(sealed, token_digest) is None
    # TOKEN_SECRET_FALLBACKS only count next to a TOKEN_SECRET.
    with override_settings(USERGROUPS={"TOKEN_SECRET_FALLBACKS": [dedicated]}):
        assert dedicated not in crypto.token_secrets()
        assert crypto.unseal_token(sealed, token_digest) is None


def test_a_box_opens_under_its_secret_or_a_fallback_of_it(scheme):
    """Audit cursors and the admin's new secrets waiting for their page are sealed boxes
    (crypto.seal_box): a fallback opens them, another secret, purpose or context not."""
    secret, old, new = scheme
    with secret(old):
        sealed = crypto.seal_box("audit.cursor", b"position", "7")
        assert crypto.open_box("audit.cursor", sealed, "7") == b"position"
        assert crypto.open_box("audit.cursor", sealed, "8") is None
        assert crypto.open_box("admin.secret_page", sealed, "7") is None
    with secret(new, [old]):
        assert crypto.open_box("audit.cursor", sealed, "7") == b"position"
    with secret(new):
        assert crypto.open_box("audit.cursor", sealed, "7") is None

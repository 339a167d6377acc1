"""``create_api_key``, ``revoke_api_key`` and ``reseal_group_tokens`` as an operator
(or a script) sees them: what they print where, and what the API does afterwards."""

import io
import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.support.api import client_for, get_or_create, status_and_body
from tests.support.factories import APIKeyFactory, UserGroupFactory
from usergroups import crypto
from usergroups.models import APIKey, Workspace

ACME = {"user_group_id": "acme"}
KEY_LINE = re.compile(r"^ugk_[A-Za-z0-9_-]{43}$")
ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.django_db


def run(name, *args, **options):
    out, err = io.StringIO(), io.StringIO()
    call_command(name, *args, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


def create_key(*args):
    out, err = run("create_api_key", *args)
    lines = out.splitlines()
    assert len(lines) == 1 and out == lines[0] + "\n", out
    assert KEY_LINE.match(lines[0]), out
    return lines[0], err


# create_api_key


def test_create_api_key_prints_the_key_alone_and_it_authenticates():
    key, err = create_key()
    row = APIKey.objects.get()
    assert row.workspace.slug == "default"
    assert row.prefix == key[: crypto.KEY_LOOKUP_LENGTH]
    assert row.digest == crypto.digest(key)
    assert row.expires_at is None and row.revoked_at is None
    # stderr tells the operator what happened, naming the key by its prefix only.
    assert "Created workspace 'default'" in err
    assert row.prefix in err and key not in err and key[crypto.KEY_LOOKUP_LENGTH :] not in err

    status, body = status_and_body(get_or_create(client_for(key), ACME))
    assert status == 200, body
    assert body["new_user_group"] is True
    assert Workspace.objects.get(slug="default").user_groups.count() == 1


def test_create_api_key_reuses_an_existing_workspace():
    workspace = Workspace.objects.create(slug="acme-corp", name="Acme")
    key, err = create_key("--workspace", "acme-corp")
    assert "Created workspace" not in err
    assert Workspace.objects.count() == 1
    assert APIKey.objects.get().workspace == workspace
    # Two keys of one workspace see the same groups.
    other, _ = create_key("--workspace", "acme-corp")
    token = get_or_create(client_for(key), ACME).json()["user_group"]["token"]
    status, body = status_and_body(get_or_create(client_for(other), ACME))
    assert (status, body["new_user_group"], body["user_group"]["token"]) == (200, False, token)


def test_create_api_key_honours_name_and_expiry():
    before = timezone.now()
    key, _ = create_key("--workspace", "team-b", "--name", "ci deploy", "--expires-in-days", "7")
    row = APIKey.objects.get(prefix=key[: crypto.KEY_LOOKUP_LENGTH])
    assert row.workspace.slug == "team-b"
    assert row.name == "ci deploy"
    assert before + timedelta(days=7) <= row.expires_at <= timezone.now() + timedelta(days=7)
    assert get_or_create(client_for(key), ACME).status_code == 200


def test_an_expired_key_from_the_command_is_refused():
    key, _ = create_key("--expires-in-days", "1")
    APIKey.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    status, body = status_and_body(get_or_create(client_for(key), ACME))
    assert (status, body["error"]["code"]) == (401, "authentication_failed")


@pytest.mark.parametrize("slug", ["not a slug", "bad/slug", "ünïcode", "", "a.b"])
def test_create_api_key_refuses_an_invalid_slug(slug):
    with pytest.raises(CommandError):
        run("create_api_key", "--workspace", slug)
    assert not Workspace.objects.exists()
    assert not APIKey.objects.exists()


@pytest.mark.parametrize("days", ["0", "-1", "-30", "x", "1.5"])
def test_create_api_key_refuses_non_positive_days(days):
    with pytest.raises(CommandError):
        run("create_api_key", f"--expires-in-days={days}")
    assert not Workspace.objects.exists()
    assert not APIKey.objects.exists()


def test_create_api_key_refuses_a_too_long_name():
    with pytest.raises(CommandError):
        run("create_api_key", "--name", "n" * 256)
    assert not APIKey.objects.exists()


def test_every_key_is_new():
    keys = {create_key()[0] for _ in range(5)}
    assert len(keys) == 5
    assert APIKey.objects.count() == 5


def test_create_api_key_in_a_real_process_prints_one_line(tmp_path):
    """Not through call_command: the real stdout of ``manage.py`` holds the key alone
    (no logging, no warnings), so ``KEY=$(python manage.py create_api_key)`` works."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="example_project.settings",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        DJANGO_SECRET_KEY="usergroups-command-test-secret-key-0123456789-abcdefghij",
        DJANGO_DEBUG="false",
    )

    def manage(*args):
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert manage("migrate", "--noinput").returncode == 0
    done = manage("create_api_key", "--workspace", "shell", "--name", "script")
    assert done.returncode == 0, done.stderr
    assert KEY_LINE.match(done.stdout.rstrip("\n")) and done.stdout.count("\n") == 1, done.stdout
    assert done.stdout.rstrip("\n") not in done.stderr
    failed = manage("create_api_key", "--expires-in-days", "0")
    assert failed.returncode != 0 and failed.stdout == ""


# revoke_api_key


def assert_refused(key):
    status, body = status_and_body(get_or_create(client_for(key), ACME))
    assert (status, body["error"]["code"]) == (401, "authentication_failed"), body


@pytest.mark.parametrize("by", ["prefix", "full key"])
def test_revoke_api_key_refuses_the_key_from_then_on(by):
    key, _ = create_key()
    kept, _ = create_key()
    assert get_or_create(client_for(key), ACME).status_code == 200
    out, err = run("revoke_api_key", key if by == "full key" else key[: crypto.KEY_LOOKUP_LENGTH])

    assert key[: crypto.KEY_LOOKUP_LENGTH] in out
    assert key not in out + err and key[crypto.KEY_LOOKUP_LENGTH :] not in out + err
    row = APIKey.objects.get(prefix=key[: crypto.KEY_LOOKUP_LENGTH])
    assert row.revoked_at is not None
    assert_refused(key)
    # Only that key: the other one of the workspace still works.
    assert get_or_create(client_for(kept), ACME).status_code == 200


def test_revoking_twice_is_harmless():
    key, _ = create_key()
    run("revoke_api_key", key)
    first = APIKey.objects.get().revoked_at
    out, err = run("revoke_api_key", key[: crypto.KEY_LOOKUP_LENGTH])
    assert "already revoked" in out
    assert key not in out + err
    assert APIKey.objects.get().revoked_at == first
    assert_refused(key)


@pytest.mark.parametrize(
    "given",
    [
        "ugk_nothere",
        "nothing",
        "",
        crypto.new_api_key(),
    ],
)
def test_revoke_api_key_of_an_unknown_key_fails(given):
    APIKeyFactory()
    with pytest.raises(CommandError):
        run("revoke_api_key", given)
    assert APIKey.objects.get().revoked_at is None


def test_revoke_api_key_needs_the_whole_key_right():
    """A full key with a known prefix but another secret revokes nothing: it does not
    name the key (and the error must not be an oracle for the rest of the key)."""
    key, _ = create_key()
    forged = key[: crypto.KEY_LOOKUP_LENGTH] + crypto.new_api_key()[crypto.KEY_LOOKUP_LENGTH :]
    with pytest.raises(CommandError) as failure:
        run("revoke_api_key", forged)
    assert forged not in str(failure.value)
    assert APIKey.objects.get().revoked_at is None
    assert get_or_create(client_for(key), ACME).status_code == 200


def test_revoke_api_key_finds_a_whole_key_by_its_digest():
    key, _ = create_key()
    with CaptureQueriesContext(connection) as queries:
        run("revoke_api_key", key)
    selects = [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith("SELECT")]
    assert any(crypto.digest(key) in sql for sql in selects)
    assert not any(key[: crypto.KEY_LOOKUP_LENGTH] in q["sql"] for q in queries)
    assert APIKey.objects.get().revoked_at is not None


def test_a_prefix_is_matched_exactly():
    key, _ = create_key()
    prefix = key[: crypto.KEY_LOOKUP_LENGTH]
    for near in (prefix[:-1], prefix.upper() if prefix.upper() != prefix else prefix.lower()):
        if near == prefix:
            continue
        with pytest.raises(CommandError):
            run("revoke_api_key", near)
    assert APIKey.objects.get().revoked_at is None


# reseal_group_tokens


def test_reseal_group_tokens_output():
    assert run("reseal_group_tokens") == ("Resealed 0 group token(s).\n", "")
    old = "usergroups-old-secret-key-for-reseal-0123456789-abcdefghijklmno"
    with override_settings(SECRET_KEY=old, SECRET_KEY_FALLBACKS=[]):
        groups = [UserGroupFactory() for _ in range(3)]
        lost = UserGroupFactory()
    tokens = {group.pk: group.token for group in groups}
    with override_settings(
        SECRET_KEY="usergroups-new-secret-key-for-reseal-0123456789-abcdefghijklmno",
        SECRET_KEY_FALLBACKS=[old],
    ):
        current = UserGroupFactory()
        # Drop the lost group's seal to one no secret opens.
        type(lost).objects.filter(pk=lost.pk).update(token_sealed=crypto._b64(bytes(32)))
        out, err = run("reseal_group_tokens")
        assert out == "Resealed 3 group token(s).\n"
        assert err == (
            "1 group token(s) open with no configured secret; "
            "they still work but cannot be shown again until rotated.\n"
        )
        # No token is printed, whatever happens.
        for token in [*tokens.values(), current.token, lost.token]:
            assert token not in out + err
        assert run("reseal_group_tokens")[0] == "Resealed 0 group token(s).\n"
    with override_settings(
        SECRET_KEY="usergroups-new-secret-key-for-reseal-0123456789-abcdefghijklmno",
        SECRET_KEY_FALLBACKS=[],
    ):
        for pk, token in tokens.items():
            assert type(groups[0]).objects.get(pk=pk).token == token

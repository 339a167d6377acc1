"""``create_api_key``, ``rotate_api_key``, ``revoke_api_key`` and ``reseal_group_tokens`` as an operator
(or a script) sees them: what they print where, and what the API does afterwards."""

import base64
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
from usergroups.scopes import SCOPES

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
    bad_scope = manage("create_api_key", "--scopes", "read,bogus")
    assert bad_scope.returncode != 0 and bad_scope.stdout == ""
    assert "bogus" in bad_scope.stderr
    rotated = manage("rotate_api_key", done.stdout.strip(), "--grace-hours", "0")
    assert rotated.returncode == 0, rotated.stderr
    assert KEY_LINE.match(rotated.stdout.rstrip("\n")) and rotated.stdout.count("\n") == 1
    assert rotated.stdout.strip() != done.stdout.strip()


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
    ids=["unknown prefix", "not a key", "empty", "well-formed key"],
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
    # The lookup never names the prefix; the revocation's audit event does, by design.
    lookups = [q["sql"] for q in queries if "usergroups_auditevent" not in q["sql"]]
    assert not any(key[: crypto.KEY_LOOKUP_LENGTH] in sql for sql in lookups)
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


# create_api_key --scopes


def test_a_new_key_has_every_scope():
    create_key()
    assert APIKey.objects.get().scopes == set(SCOPES)


def test_create_api_key_narrows_the_scopes():
    key, err = create_key("--scopes", "read,embed")
    assert APIKey.objects.get().scopes == {"read", "embed"}
    assert "read, embed" in err
    group = UserGroupFactory(workspace=APIKey.objects.get().workspace)
    # read: an existing group is read; no write: an unknown id is not created.
    assert get_or_create(client_for(key), {"user_group_id": group.provided_id}).status_code == 200
    status, body = status_and_body(get_or_create(client_for(key), ACME))
    assert (status, body["error"]["code"]) == (403, "permission_denied")
    assert "'write'" in body["error"]["message"]


@pytest.mark.parametrize(
    "scopes", ["read,admin", "admin", "", ",", "READ", "read;write", "read write", "embeds"]
)
def test_create_api_key_refuses_unknown_scopes(scopes):
    with pytest.raises(CommandError) as failure:
        run("create_api_key", "--workspace", "fresh", f"--scopes={scopes}")
    assert "scope" in str(failure.value)
    assert not APIKey.objects.exists()
    assert not Workspace.objects.exists()


# rotate_api_key


@pytest.fixture
def move_clock(monkeypatch):
    """``move_clock(delta)``: from then on, ``timezone.now()`` is ``delta`` later than the
    real clock (the key's expiry is compared with it)."""
    real_now = timezone.now

    def move(delta):
        monkeypatch.setattr(timezone, "now", lambda: real_now() + delta)

    return move


def rotate_key(*args):
    out, err = run("rotate_api_key", *args)
    lines = out.splitlines()
    assert len(lines) == 1 and out == lines[0] + "\n", out
    assert KEY_LINE.match(lines[0]), out
    return lines[0], err


def row_of(key):
    return APIKey.objects.get(prefix=key[: crypto.KEY_LOOKUP_LENGTH])


def works(key):
    return get_or_create(client_for(key), ACME).status_code == 200


@pytest.mark.parametrize("by", ["prefix", "full key"])
def test_rotate_api_key_prints_a_new_key_like_the_old_one(by):
    old, _ = create_key("--workspace", "team-r", "--name", "dash", "--scopes", "read,write")
    new, err = rotate_key(old if by == "full key" else old[: crypto.KEY_LOOKUP_LENGTH])
    assert new != old
    old_row, new_row = row_of(old), row_of(new)
    assert (new_row.workspace, new_row.name, new_row.scopes) == (
        old_row.workspace,
        old_row.name,
        {"read", "write"},
    )
    assert new_row.expires_at is None and new_row.revoked_at is None
    # stderr names both keys by their prefix, never in full.
    assert old_row.prefix in err and new_row.prefix in err
    assert old not in err and new not in err
    assert works(new) and works(old)


def test_the_old_key_works_for_the_default_24_hours_then_is_refused(move_clock):
    old, _ = create_key()
    before = timezone.now()
    new, _ = rotate_key(old)
    end = row_of(old).expires_at
    assert before + timedelta(hours=24) <= end <= timezone.now() + timedelta(hours=24)
    move_clock(timedelta(hours=23, minutes=59))
    assert works(old) and works(new)
    move_clock(timedelta(hours=24, seconds=1))
    assert_refused(old)
    assert works(new)


def test_grace_hours_n(move_clock):
    old, _ = create_key()
    new, err = rotate_key(old, "--grace-hours", "3")
    assert "keeps working until" in err
    move_clock(timedelta(hours=2, minutes=59))
    assert works(old)
    move_clock(timedelta(hours=3, seconds=1))
    assert_refused(old)
    assert works(new)
    assert row_of(old).revoked_at is None  # ended by its expiry, not revoked


def test_grace_hours_zero_revokes_the_old_key_at_once():
    old, _ = create_key()
    new, err = rotate_key(old, "--grace-hours=0")
    assert "is revoked" in err
    assert row_of(old).revoked_at is not None
    assert_refused(old)
    assert works(new)


def test_a_grace_never_extends_an_earlier_expiry():
    old, _ = create_key("--expires-in-days", "1")
    expiry = row_of(old).expires_at
    rotate_key(old, "--grace-hours", "48")
    assert row_of(old).expires_at == expiry


@pytest.mark.parametrize("hours", ["-1", "x", "1.5"])
def test_rotate_api_key_refuses_a_bad_grace(hours):
    old, _ = create_key()
    with pytest.raises(CommandError):
        run("rotate_api_key", old, f"--grace-hours={hours}")
    assert APIKey.objects.count() == 1 and works(old)


@pytest.mark.parametrize("state", ["revoked", "expired"])
def test_rotate_api_key_refuses_a_dead_key(state):
    old, _ = create_key()
    if state == "revoked":
        run("revoke_api_key", old)
    else:
        APIKey.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(CommandError) as failure:
        run("rotate_api_key", old)
    assert old not in str(failure.value)
    assert APIKey.objects.count() == 1


@pytest.mark.parametrize(
    "given",
    ["ugk_nothere", "", crypto.new_api_key()],
    ids=["unknown prefix", "empty", "well-formed key"],
)
def test_rotate_api_key_of_an_unknown_key_fails(given):
    APIKeyFactory()
    with pytest.raises(CommandError):
        run("rotate_api_key", given)
    assert APIKey.objects.count() == 1


def test_rotating_twice_within_the_grace_gives_two_working_keys(move_clock):
    old, _ = create_key()
    first, _ = rotate_key(old, "--grace-hours", "1")
    second, _ = rotate_key(first, "--grace-hours", "2")
    move_clock(timedelta(hours=1, seconds=1))
    assert_refused(old)
    assert works(first) and works(second)
    move_clock(timedelta(hours=2, seconds=1))
    assert_refused(first)
    assert works(second)


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
        type(lost).objects.filter(pk=lost.pk).update(
            token_sealed=base64.urlsafe_b64encode(bytes(32)).rstrip(b"=").decode()
        )
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

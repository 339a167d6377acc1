"""Nothing usable is at rest: a full copy of the database yields no API key and no
group token, not even in part, and the sealed tokens open only with the server secret."""

import base64
import io
import os
import shutil
import subprocess

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.test import override_settings

from tests.support.api import API_URL, get_or_create
from tests.support.leaks import find_leaks
from usergroups import crypto
from usergroups.models import APIKey, UserGroup

pytestmark = pytest.mark.django_db(transaction=True)


def unb64(text: str) -> bytes:
    """Unpadded base64url, as the app writes sealed tokens and key bodies."""
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sqlite_file_bytes() -> bytes:
    """The database file as it is on disk, with the write-ahead log folded in and also
    read (plus any rollback journal), so nothing only in the log escapes."""
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    name = connection.settings_dict["NAME"]
    assert os.path.isfile(name), f"the test database must be a file, not {name!r}"
    chunks = []
    for path in (name, f"{name}-wal", f"{name}-journal", f"{name}-shm"):
        if os.path.exists(path):
            with open(path, "rb") as file:
                chunks.append(file.read())
    return b"\n".join(chunks)


def pg_dump() -> bytes:
    db = connection.settings_dict
    env = dict(os.environ)
    if db.get("PASSWORD"):
        env["PGPASSWORD"] = db["PASSWORD"]
    done = subprocess.run(
        [
            "pg_dump",
            "--host",
            db.get("HOST") or "127.0.0.1",
            "--port",
            str(db.get("PORT") or 5432),
            "--username",
            db.get("USER") or "postgres",
            "--no-password",
            db["NAME"],
        ],
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


def mariadb_dump() -> bytes:
    db = connection.settings_dict
    tool = shutil.which("mariadb-dump") or shutil.which("mysqldump")
    assert tool, "mariadb-dump (or mysqldump) is needed to dump a MariaDB database"
    command = [
        tool,
        "--host",
        db.get("HOST") or "127.0.0.1",
        "--port",
        str(db.get("PORT") or 3306),
        "--user",
        db.get("USER") or "root",
        "--single-transaction",
        "--skip-extended-insert",
        db["NAME"],
    ]
    env = dict(os.environ)
    if db.get("PASSWORD"):
        env["MYSQL_PWD"] = db["PASSWORD"]
    done = subprocess.run(command, env=env, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


def vendor_dump() -> bytes:
    """The database as its own tools copy it."""
    if connection.vendor == "sqlite":
        return sqlite_file_bytes()
    if connection.vendor == "postgresql":
        return pg_dump()
    if connection.vendor == "mysql":
        return mariadb_dump()
    raise AssertionError(f"no dump for {connection.vendor}")


def every_row() -> str:
    """Every row of every table, read through introspection (any vendor)."""
    lines = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            lines.extend(f"{table}: {row!r}" for row in cursor.fetchall())
    return "\n".join(lines)


@pytest.fixture
def issued(api_key, api_client):
    """Keys and tokens issued the ways a site issues them; ``{name: secret}``."""
    secrets = {"fixture key": api_key.key}
    for n in range(3):
        out = io.StringIO()
        call_command(
            "create_api_key",
            workspace=f"dump-{n}",
            name=f"key {n}",
            stdout=out,
            stderr=io.StringIO(),
        )
        secrets[f"command key {n}"] = out.getvalue().strip()
    for n in range(4):
        response = get_or_create(
            api_client,
            {
                "user_group_id": f"dump-group-{n}",
                "mapping": {"schema": f"source-{n}"},
                "properties": {"tenant": n},
            },
        )
        assert response.status_code == 200, response.content
        secrets[f"token {n}"] = response.json()["user_group"]["token"]
    rotated = api_client.post(API_URL, {"current_token": secrets["token 0"]}, format="json")
    assert rotated.status_code == 200
    secrets["token 0 (rotated away)"] = secrets.pop("token 0")
    secrets["token 0 (after rotation)"] = rotated.json()["user_group"]["token"]
    # Show a token again (get-or-create of a known id) and use a key from a command.
    response = get_or_create(api_client, {"user_group_id": "dump-group-1"})
    assert response.status_code == 200, response.content
    assert response.json()["new_user_group"] is False
    for value in secrets.values():
        assert crypto.looks_like_api_key(value) or crypto.looks_like_group_token(value), value
    return secrets


def assert_stored_and_secret_free(dump: str | bytes, secrets: dict[str, str]):
    text = dump.decode("utf-8", "replace") if isinstance(dump, bytes) else dump
    # The dump is real: it holds what the database is meant to hold...
    for row in APIKey.objects.all():
        assert row.prefix in text and row.digest in text
    for group in UserGroup.objects.all():
        assert group.token_digest in text and group.token_sealed in text
        assert group.provided_id in text
    # ...and none of the secrets, whole or in part, raw or encoded.
    assert find_leaks(dump, secrets) == []


def test_database_dump_holds_no_key_and_no_token(issued):
    assert APIKey.objects.count() == 4
    assert UserGroup.objects.count() == 4
    assert_stored_and_secret_free(vendor_dump(), issued)


def test_every_row_holds_no_key_and_no_token(issued):
    assert_stored_and_secret_free(every_row(), issued)


def test_the_leak_check_finds_planted_secrets(issued):
    """The dump check fails when a secret is in the database (so it can fail)."""
    group = UserGroup.objects.get(provided_id="dump-group-2")
    UserGroup.objects.filter(pk=group.pk).update(name=issued["token 2"][4:])
    UserGroup.objects.filter(provided_id="dump-group-3").update(
        properties={"raw": unb64(issued["fixture key"][4:]).hex()}
    )
    leaks = find_leaks(vendor_dump(), issued)
    assert any(leak.startswith("token 2:") for leak in leaks), leaks
    assert any(leak.startswith("fixture key:") for leak in leaks), leaks


def test_sealed_token_opens_only_with_the_configured_secret(group):
    sealed, token_digest = group.token_sealed, group.token_digest
    assert crypto.unseal_token(sealed, token_digest) == group.token

    with override_settings(SECRET_KEY="another-secret-key-" + "x" * 40, SECRET_KEY_FALLBACKS=[]):
        assert crypto.unseal_token(sealed, token_digest) is None
        assert UserGroup.objects.get(pk=group.pk).token is None
    with override_settings(
        SECRET_KEY="another-secret-key-" + "x" * 40, SECRET_KEY_FALLBACKS=[settings.SECRET_KEY]
    ):
        assert crypto.unseal_token(sealed, token_digest) == group.token
    with override_settings(USERGROUPS={"TOKEN_SECRET": "a-dedicated-token-secret"}):
        # A dedicated secret replaces SECRET_KEY: the old seal no longer opens.
        assert crypto.unseal_token(sealed, token_digest) is None
    # Same seal, another token's digest: the keystream differs, nothing opens.
    other = crypto.digest(crypto.new_group_token())
    assert crypto.unseal_token(sealed, other) is None


def test_the_seal_differs_per_token_and_per_secret():
    token = crypto.new_group_token()
    token_digest = crypto.digest(token)
    sealed = crypto.seal_token(token, token_digest)
    assert token[4:] not in sealed and sealed != token[4:]
    with override_settings(SECRET_KEY="another-secret-key-" + "x" * 40):
        assert crypto.seal_token(token, token_digest) != sealed
    # Two tokens never share a keystream (it is keyed by the token's digest).
    other = crypto.new_group_token()
    other_digest = crypto.digest(other)
    stream = bytes(a ^ b for a, b in zip(unb64(sealed), unb64(token[4:]), strict=True))
    other_stream = bytes(
        a ^ b
        for a, b in zip(
            unb64(crypto.seal_token(other, other_digest)),
            unb64(other[4:]),
            strict=True,
        )
    )
    assert stream != other_stream


def test_api_keys_are_stored_as_digest_and_prefix_only(issued):
    for name, key in issued.items():
        if not key.startswith(crypto.KEY_PREFIX):
            continue
        row = APIKey.objects.get(prefix=key[: crypto.KEY_LOOKUP_LENGTH])
        assert row.digest == crypto.digest(key), name
        stored = " ".join(
            str(value) for value in APIKey.objects.filter(pk=row.pk).values().get().values()
        )
        assert key not in stored and key[crypto.KEY_LOOKUP_LENGTH :] not in stored

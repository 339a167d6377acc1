"""The shipped migrations match the models and run both ways on every database."""

import io
import json

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader

from tests.support.api import client_for, get_or_create
from usergroups import crypto
from usergroups.models import APIKey, EndUser, SchemaMapping, UserGroup, Workspace
from usergroups.scopes import SCOPES

TABLES = {model._meta.db_table for model in (Workspace, APIKey, UserGroup, SchemaMapping)}


@pytest.mark.django_db  # makemigrations checks the applied history for consistency
def test_models_and_migrations_agree():
    out = io.StringIO()
    try:
        call_command("makemigrations", "usergroups", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit:  # --check exits 1 when a migration is missing
        pytest.fail(f"makemigrations would write a migration:\n{out.getvalue()}")
    assert "No changes detected" in out.getvalue()


def test_migrations_have_one_leaf_and_no_conflicts():
    loader = MigrationLoader(None, ignore_no_migrations=True)
    assert loader.detect_conflicts().get("usergroups") is None
    leaves = loader.graph.leaf_nodes("usergroups")
    assert len(leaves) == 1, leaves


def usergroups_tables() -> set[str]:
    with connection.cursor() as cursor:
        return TABLES & set(connection.introspection.table_names(cursor))


@pytest.mark.django_db(transaction=True)
def test_migrate_to_zero_and_back():
    executor = MigrationExecutor(connection)
    leaf = executor.loader.graph.leaf_nodes("usergroups")
    assert usergroups_tables() == TABLES

    out = io.StringIO()
    try:
        call_command("migrate", "usergroups", "zero", stdout=out, verbosity=1)
        assert usergroups_tables() == set()
        executor.loader.build_graph()
        applied = {key for key in executor.loader.applied_migrations if key[0] == "usergroups"}
        assert applied == set()
    finally:
        # Back to the latest state whatever happened, for the tests that follow.
        call_command("migrate", "usergroups", stdout=out, verbosity=1)

    assert usergroups_tables() == TABLES
    executor.loader.build_graph()
    assert set(leaf) <= set(executor.loader.applied_migrations)
    # The migrated schema works: the unique constraints are there again.
    workspace = Workspace.objects.create(slug="after-migrations")
    UserGroup.objects.create(
        workspace=workspace, provided_id="x", name="x", token_digest="a" * 64, token_sealed="s"
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        UserGroup.objects.create(
            workspace=workspace, provided_id="x", name="x", token_digest="b" * 64, token_sealed="s"
        )


@pytest.mark.django_db(transaction=True)
def test_every_migration_step_runs_backwards_and_forwards():
    """Each migration of the app, one at a time, down to the first and up again."""
    executor = MigrationExecutor(connection)
    nodes = [
        node
        for node in executor.loader.graph.forwards_plan(
            executor.loader.graph.leaf_nodes("usergroups")[0]
        )
        if node[0] == "usergroups"
    ]
    try:
        for target in reversed(nodes[:-1]):
            executor = MigrationExecutor(connection)
            executor.migrate([target])
        executor = MigrationExecutor(connection)
        executor.migrate([nodes[-1]])
    finally:
        call_command("migrate", "usergroups", verbosity=0)
    executor = MigrationExecutor(connection)
    assert executor.migration_plan(executor.loader.graph.leaf_nodes("usergroups")) == []


# --- 0005: properties as compact JSON text ----------------------------------------------

BEFORE_TEXT = ("usergroups", "0004_apikey_digest_unique")
AS_TEXT = ("usergroups", "0005_properties_as_compact_text")

STORED_BEFORE = {
    "many-1e300": {"v": [1e300] * 9000},
    "awkward": {
        "huge": 1e300,
        "tiny": 1e-300,
        "negative zero": -0.0,
        "tenth": 0.1,
        "int beyond doubles": 10**300,
        "int beyond 64 bits": 2**64 + 1,
        "keys": {"b": 1, "a": 2},
        "text": 'é 😀 \u2028 \\ "',
        "nested": [[], {}, [None, True, False]],
    },
    "empty": {},
    "none": None,
}


def equal_as_doubles(a, b) -> bool:
    """The contract's equality: JSON values, numbers compared as IEEE 754 doubles."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(equal_as_doubles(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(equal_as_doubles, a, b))
    return type(a) is type(b) and a == b


def stored_properties_text() -> dict[int, str | None]:
    table = connection.ops.quote_name(UserGroup._meta.db_table)
    column = connection.ops.quote_name(UserGroup._meta.get_field("properties").column)
    pk = connection.ops.quote_name(UserGroup._meta.pk.column)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {pk}, {column} FROM {table}")
        return dict(cursor.fetchall())


@pytest.mark.django_db(transaction=True)
def test_properties_become_compact_text_and_keep_their_values():
    """Rows written by the JSON column of 0003 (jsonb on PostgreSQL) read back equal after
    0005, each stored as the compact text the field writes; the 1e300 row, which jsonb
    kept as 301-digit integers (2.7 MB), is back within the size limit."""
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([BEFORE_TEXT])
        old_apps = executor.loader.project_state([BEFORE_TEXT]).apps
        OldWorkspace = old_apps.get_model("usergroups", "Workspace")
        OldUserGroup = old_apps.get_model("usergroups", "UserGroup")
        workspace = OldWorkspace.objects.create(slug="before-0005")
        ids = {}
        for n, (name, properties) in enumerate(STORED_BEFORE.items()):
            ids[name] = OldUserGroup.objects.create(
                workspace=workspace,
                provided_id=name,
                name=name,
                properties=properties,
                token_digest=f"{n:064d}",
                token_sealed="s",
            ).pk

        executor = MigrationExecutor(connection)
        executor.migrate([AS_TEXT])
    finally:
        call_command("migrate", "usergroups", verbosity=0)

    texts = stored_properties_text()
    for name, written in STORED_BEFORE.items():
        read = UserGroup.objects.get(pk=ids[name]).properties
        assert equal_as_doubles(read, written), name
        if written is None:
            assert texts[ids[name]] is None
            continue
        assert texts[ids[name]] == json.dumps(read, ensure_ascii=False, separators=(",", ":"))
        assert len(texts[ids[name]].encode()) <= 65536, name
    # Read back as written, to the character, wherever the old column kept the text.
    many = UserGroup.objects.get(pk=ids["many-1e300"]).properties
    assert texts[ids["many-1e300"]] == '{"v":[' + ",".join(["1e+300"] * 9000) + "]}"
    assert all(type(number) is float for number in many["v"])


# --- 0006: API key scopes ---------------------------------------------------------------

BEFORE_SCOPES = AS_TEXT
WITH_SCOPES = ("usergroups", "0006_apikey_scopes")


@pytest.mark.django_db(transaction=True)
def test_existing_keys_get_every_scope():
    """A key made before 0006 holds all four scopes after it, and keeps working: it could
    do everything before, and a migration must not take that away."""
    executor = MigrationExecutor(connection)
    key = crypto.new_api_key()
    try:
        executor.migrate([BEFORE_SCOPES])
        old_apps = executor.loader.project_state([BEFORE_SCOPES]).apps
        OldWorkspace = old_apps.get_model("usergroups", "Workspace")
        OldAPIKey = old_apps.get_model("usergroups", "APIKey")
        assert not any(f.name.startswith("scope_") for f in OldAPIKey._meta.fields)
        workspace = OldWorkspace.objects.create(slug="before-0006")
        old = OldAPIKey.objects.create(
            workspace=workspace,
            name="old",
            prefix=key[: crypto.KEY_LOOKUP_LENGTH],
            digest=crypto.digest(key),
        )
        executor = MigrationExecutor(connection)
        executor.migrate([WITH_SCOPES])
    finally:
        call_command("migrate", "usergroups", verbosity=0)

    migrated = APIKey.objects.get(pk=old.pk)
    assert migrated.scopes == set(SCOPES)
    assert all(getattr(migrated, f"scope_{scope}") is True for scope in SCOPES)
    response = get_or_create(client_for(key), {"user_group_id": "made-by-an-old-key"})
    assert response.status_code == 200 and response.json()["new_user_group"] is True


BEFORE_BINDINGS = ("usergroups", "0009_enduser")
WITH_BINDINGS = ("usergroups", "0010_embed_bindings")


@pytest.mark.django_db(transaction=True)
def test_existing_groups_and_end_users_get_a_binding_each():
    """AddField's default is evaluated once for every existing row: 0010 gives each row a
    value of its own, so no two groups (or end users) share the value their tokens carry."""
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([BEFORE_BINDINGS])
        old_apps = executor.loader.project_state([BEFORE_BINDINGS]).apps
        workspace = old_apps.get_model("usergroups", "Workspace").objects.create(slug="pre-0010")
        OldGroup = old_apps.get_model("usergroups", "UserGroup")
        OldEndUser = old_apps.get_model("usergroups", "EndUser")
        for n in range(3):
            OldGroup.objects.create(
                workspace=workspace,
                provided_id=f"g{n}",
                name="g",
                token_digest=f"{n:064d}",
                token_sealed="s",
            )
            OldEndUser.objects.create(workspace=workspace, end_user_id=f"u{n}", display_name="u")
        executor = MigrationExecutor(connection)
        executor.migrate([WITH_BINDINGS])
    finally:
        call_command("migrate", "usergroups", verbosity=0)

    for model in (UserGroup, EndUser):
        bindings = list(model.objects.values_list("embed_binding", flat=True))
        assert len(bindings) == 3 and len(set(bindings)) == 3 and all(bindings)

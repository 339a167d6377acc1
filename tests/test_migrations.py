"""The shipped migrations match the models and run both ways on every database."""

import io

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader

from usergroups.models import APIKey, SchemaMapping, UserGroup, Workspace

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

"""The read model's triggers (CONTRACT section 9), on PostgreSQL only: every change to a
table that a hot read depends on (a mint's webhooks included) notifies channel
``usergroups`` with the id of the workspace it belongs to, in the writing transaction, whoever writes (the app, another
host, SQL typed by an operator). PostgreSQL sends one notification per distinct payload
of a transaction, so a bulk change costs one. An update that changes nothing a read
depends on (an API key's ``last_used_at`` alone, say) notifies nothing; the trigger
function compares the rows, so no column is named in a trigger's definition, which would
keep later migrations from changing its type."""

from django.db import migrations

CHANNEL = "usergroups"

# (model, the column naming its workspace); a mapping names its group instead.
_BY_WORKSPACE = (
    ("Workspace", "id"),
    ("APIKey", "workspace_id"),
    ("UserGroup", "workspace_id"),
    ("EndUser", "workspace_id"),
    ("RevokedEmbedToken", "workspace_id"),
    ("Webhook", "workspace_id"),
)
# Columns no read depends on, written often (a key's use; a receiver's failures, its turn
# and its failing mark): an update of these alone notifies nothing.
_NOT_NOTIFYING = {
    "APIKey": {"last_used_at"},
    "Webhook": {"consecutive_failures", "sending_until", "failing"},
}

_FUNCTIONS = f"""
CREATE OR REPLACE FUNCTION usergroups_notify_workspace() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    old_row jsonb;
    new_row jsonb;
BEGIN
    -- TG_ARGV[0]: the column naming the workspace; the others: columns whose change alone
    -- no read depends on. Compared here, not in the trigger's definition, so that a later
    -- migration may still change those columns' types.
    IF TG_OP = 'UPDATE' THEN
        old_row := to_jsonb(OLD);
        new_row := to_jsonb(NEW);
        FOR i IN 1 .. TG_NARGS - 1 LOOP
            old_row := old_row - TG_ARGV[i];
            new_row := new_row - TG_ARGV[i];
        END LOOP;
        IF old_row = new_row THEN
            RETURN NULL;
        END IF;
    END IF;
    IF TG_OP <> 'INSERT' THEN
        PERFORM pg_notify('{CHANNEL}', to_jsonb(OLD) ->> TG_ARGV[0]);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM pg_notify('{CHANNEL}', to_jsonb(NEW) ->> TG_ARGV[0]);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION usergroups_notify_group_workspace() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    row_group bigint;
    found_workspace bigint;
BEGIN
    row_group := (to_jsonb(CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END) ->> TG_ARGV[0])::bigint;
    EXECUTE format('SELECT workspace_id FROM %I WHERE team_id = $1', TG_ARGV[1])
        INTO found_workspace USING row_group;
    -- The group gone already: everything (its own deletion notified its workspace too).
    PERFORM pg_notify('{CHANNEL}', COALESCE(found_workspace::text, '*'));
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION usergroups_notify_all() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('{CHANNEL}', '*');
    RETURN NULL;
END $$;
"""


def _tables(apps):
    for name, column in _BY_WORKSPACE:
        model = apps.get_model("usergroups", name)
        yield model, column
    yield apps.get_model("usergroups", "SchemaMapping"), None


def create_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    quote = schema_editor.quote_name
    schema_editor.execute(_FUNCTIONS, params=None)
    groups = apps.get_model("usergroups", "UserGroup")._meta.db_table
    for model, column in _tables(apps):
        table = model._meta.db_table
        if column is None:
            function = f"usergroups_notify_group_workspace('group_id', '{groups}')"
        else:
            skipped = sorted(_NOT_NOTIFYING.get(model.__name__, set()))
            arguments = ", ".join(f"'{name}'" for name in [column, *skipped])
            function = f"usergroups_notify_workspace({arguments})"
        schema_editor.execute(
            f"CREATE TRIGGER usergroups_read_model AFTER INSERT OR UPDATE OR DELETE"
            f" ON {quote(table)} FOR EACH ROW EXECUTE FUNCTION {function}"
        )
        schema_editor.execute(
            f"CREATE TRIGGER usergroups_read_model_truncate AFTER TRUNCATE ON {quote(table)}"
            f" FOR EACH STATEMENT EXECUTE FUNCTION usergroups_notify_all()"
        )


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    quote = schema_editor.quote_name
    for model, _column in _tables(apps):
        table = quote(model._meta.db_table)
        schema_editor.execute(f"DROP TRIGGER IF EXISTS usergroups_read_model ON {table}")
        schema_editor.execute(f"DROP TRIGGER IF EXISTS usergroups_read_model_truncate ON {table}")
    for function in ("workspace", "group_workspace", "all"):
        schema_editor.execute(f"DROP FUNCTION IF EXISTS usergroups_notify_{function}()")


class Migration(migrations.Migration):
    dependencies = [("usergroups", "0012_webhooks")]

    operations = [migrations.RunPython(create_triggers, drop_triggers, elidable=False)]

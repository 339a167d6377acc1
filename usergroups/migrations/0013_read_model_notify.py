"""The read model's triggers (CONTRACT section 9), on PostgreSQL only: every change to a
table that a hot read depends on notifies channel ``usergroups`` with the id of the
workspace it belongs to, in the writing transaction, whoever writes (the app, another
host, SQL typed by an operator). PostgreSQL sends one notification per distinct payload
of a transaction, so a bulk change costs one. An API key's ``last_used_at`` alone is not
a change the reads depend on: its update notifies nothing."""

from django.db import migrations

CHANNEL = "usergroups"

# (model, the column naming its workspace); a mapping names its group instead.
_BY_WORKSPACE = (
    ("Workspace", "id"),
    ("APIKey", "workspace_id"),
    ("UserGroup", "workspace_id"),
    ("EndUser", "workspace_id"),
    ("RevokedEmbedToken", "workspace_id"),
)
_NOT_NOTIFYING = {"APIKey": {"last_used_at"}}

_FUNCTIONS = f"""
CREATE OR REPLACE FUNCTION usergroups_notify_workspace() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
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
        skipped = _NOT_NOTIFYING.get(model.__name__, set())
        if skipped:
            columns = ", ".join(
                quote(field.column)
                for field in model._meta.concrete_fields
                if field.name not in skipped
            )
            events = f"INSERT OR DELETE OR UPDATE OF {columns}"
        else:
            events = "INSERT OR UPDATE OR DELETE"
        if column is None:
            function = f"usergroups_notify_group_workspace('group_id', '{groups}')"
        else:
            function = f"usergroups_notify_workspace('{column}')"
        schema_editor.execute(
            f"CREATE TRIGGER usergroups_read_model AFTER {events} ON {quote(table)}"
            f" FOR EACH ROW EXECUTE FUNCTION {function}"
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

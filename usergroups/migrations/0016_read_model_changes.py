"""The read model's triggers say what changed (CONTRACT 9a), on PostgreSQL only.

0013's triggers named a change's workspace, and a process forgot the whole workspace.
These name the change itself, as :mod:`usergroups.read_model.changes` reads it:
``"<transaction id> <kind> <what>"``, in the writing transaction, whoever writes. The
transaction id lets a writer know when its own process has heard its write. An update
that changes only columns no read depends on notifies nothing (or, for an API key's
``last_used_at``, only that); the function compares the rows, so no column is named in a
trigger's definition, which would keep later migrations from changing its type.
"""

from django.db import migrations

CHANNEL = "usergroups"

# model: (kind, the fields naming what changed, the kind of a change of quiet fields
# alone ("": none), the quiet fields: written often, no read depends on them).
_TABLES = {
    "Workspace": ("w", ("id",), "", ()),
    "APIKey": ("k", ("public_id",), "l", ("last_used_at",)),
    "UserGroup": ("g", ("team_id",), "", ()),
    "SchemaMapping": ("g", ("group",), "", ()),
    "EndUser": ("u", ("workspace", "end_user_id"), "", ()),
    "RevokedEmbedToken": ("t", ("jti",), "", ()),
    "Webhook": ("h", ("workspace",), "", ("consecutive_failures", "sending_until", "failing")),
}

_FUNCTIONS = f"""
CREATE OR REPLACE FUNCTION usergroups_notify_change() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    -- TG_ARGV: the kind; the columns naming what changed, comma-separated; the kind of
    -- a change of quiet columns alone ('' for none); the quiet columns.
    kind text := TG_ARGV[0];
    old_row jsonb;
    new_row jsonb;
    what text;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        old_row := to_jsonb(OLD);
        new_row := to_jsonb(NEW);
        FOR i IN 3 .. TG_NARGS - 1 LOOP
            old_row := old_row - TG_ARGV[i];
            new_row := new_row - TG_ARGV[i];
        END LOOP;
        IF old_row = new_row THEN
            IF TG_ARGV[2] = '' OR to_jsonb(OLD) = to_jsonb(NEW) THEN
                RETURN NULL;
            END IF;
            kind := TG_ARGV[2];
        END IF;
    END IF;
    IF TG_OP <> 'INSERT' THEN
        SELECT string_agg(to_jsonb(OLD) ->> name, ' ') INTO what
            FROM unnest(string_to_array(TG_ARGV[1], ',')) AS name;
        PERFORM pg_notify('{CHANNEL}', pg_current_xact_id() || ' ' || kind || ' ' || what);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        SELECT string_agg(to_jsonb(NEW) ->> name, ' ') INTO what
            FROM unnest(string_to_array(TG_ARGV[1], ',')) AS name;
        PERFORM pg_notify('{CHANNEL}', pg_current_xact_id() || ' ' || kind || ' ' || what);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION usergroups_notify_everything() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('{CHANNEL}', pg_current_xact_id() || ' *');
    RETURN NULL;
END $$;
"""

_OLD_FUNCTIONS = ("workspace", "group_workspace", "all")


def _drop(schema_editor, apps, functions):
    quote = schema_editor.quote_name
    for name in _TABLES:
        table = quote(apps.get_model("usergroups", name)._meta.db_table)
        schema_editor.execute(f"DROP TRIGGER IF EXISTS usergroups_read_model ON {table}")
        schema_editor.execute(f"DROP TRIGGER IF EXISTS usergroups_read_model_truncate ON {table}")
    for function in functions:
        schema_editor.execute(f"DROP FUNCTION IF EXISTS usergroups_notify_{function}()")


def create_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    _drop(schema_editor, apps, _OLD_FUNCTIONS)
    quote = schema_editor.quote_name
    schema_editor.execute(_FUNCTIONS, params=None)
    for name, (kind, naming, quiet_kind, quiet) in _TABLES.items():
        model = apps.get_model("usergroups", name)
        columns = ",".join(model._meta.get_field(field).column for field in naming)
        quiet_columns = [model._meta.get_field(field).column for field in quiet]
        arguments = ", ".join(f"'{value}'" for value in [kind, columns, quiet_kind, *quiet_columns])
        table = quote(model._meta.db_table)
        schema_editor.execute(
            f"CREATE TRIGGER usergroups_read_model AFTER INSERT OR UPDATE OR DELETE ON {table}"
            f" FOR EACH ROW EXECUTE FUNCTION usergroups_notify_change({arguments})"
        )
        schema_editor.execute(
            f"CREATE TRIGGER usergroups_read_model_truncate AFTER TRUNCATE ON {table}"
            " FOR EACH STATEMENT EXECUTE FUNCTION usergroups_notify_everything()"
        )


def restore_0013_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    from importlib import import_module

    _drop(schema_editor, apps, ("change", "everything"))
    import_module("usergroups.migrations.0013_read_model_notify").create_triggers(
        apps, schema_editor
    )


class Migration(migrations.Migration):
    dependencies = [("usergroups", "0015_webhook_in_flight")]

    operations = [
        migrations.RunPython(create_triggers, restore_0013_triggers, elidable=False),
    ]

"""The ``name`` of groups and of API keys from ``varchar(255)`` to ``varchar(300)``: what
Django's ``AlterField`` to a longer ``max_length`` runs on PostgreSQL (``sqlmigrate``
shows the same statement), on columns every get, rotation and mint reads. A backward-
compatible change: the old code keeps working on the new schema, so a rolling upgrade
applies it while the old code serves."""

from django.db import migrations

WIDENED = ("usergroups_usergroup", "usergroups_apikey")


class Migration(migrations.Migration):
    dependencies = [("usergroups", "__latest__")]

    operations = [
        migrations.RunSQL(
            f'ALTER TABLE "{table}" ALTER COLUMN "name" TYPE varchar(300)',
            reverse_sql=f'ALTER TABLE "{table}" ALTER COLUMN "name" TYPE varchar(255)',
        )
        for table in WIDENED
    ]

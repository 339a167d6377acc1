"""An API key's ``public_id``: what its embed tokens name it by (CONTRACT 8a), random and
no part of the key, where 0.3 tokens carried the key's prefix."""

from django.db import migrations

import usergroups.crypto
import usergroups.fields


def fill(apps, schema_editor):
    APIKey = apps.get_model("usergroups", "APIKey")
    for key in APIKey.objects.filter(public_id__isnull=True).only("pk"):
        APIKey.objects.filter(pk=key.pk).update(public_id=usergroups.crypto.new_binding())


class Migration(migrations.Migration):
    dependencies = [("usergroups", "0013_read_model_notify")]

    operations = [
        migrations.AddField(
            model_name="apikey",
            name="public_id",
            field=usergroups.fields.ExactCharField(editable=False, max_length=16, null=True),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop, elidable=True),
        migrations.AlterField(
            model_name="apikey",
            name="public_id",
            field=usergroups.fields.ExactCharField(
                default=usergroups.crypto.new_binding, editable=False, max_length=16, unique=True
            ),
        ),
    ]

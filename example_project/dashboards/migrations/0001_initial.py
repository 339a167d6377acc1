"""The two sample data sources, and their rows from ``data/*.csv``."""

from django.db import migrations, models

SOURCES = {"eu_warehouse": "EuWarehouseSale", "us_warehouse": "UsWarehouseSale"}


def load_sample_data(apps, schema_editor):
    from example_project.dashboards.sources import load_sample_rows

    for source_id, model_name in SOURCES.items():
        load_sample_rows(apps.get_model("dashboards", model_name), source_id)


class Migration(migrations.Migration):
    initial = True

    dependencies = []

    operations = [
        migrations.CreateModel(
            name="EuWarehouseSale",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("region", models.CharField(max_length=32)),
                ("product", models.CharField(max_length=64)),
                ("month", models.CharField(help_text="YYYY-MM", max_length=7)),
                ("amount", models.IntegerField()),
            ],
            options={
                "db_table": "dashboards_sales_eu_warehouse",
                "indexes": [models.Index(fields=["region", "month"], name="dash_eu_region_month")],
            },
        ),
        migrations.CreateModel(
            name="UsWarehouseSale",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("region", models.CharField(max_length=32)),
                ("product", models.CharField(max_length=64)),
                ("month", models.CharField(help_text="YYYY-MM", max_length=7)),
                ("amount", models.IntegerField()),
            ],
            options={
                "db_table": "dashboards_sales_us_warehouse",
                "indexes": [models.Index(fields=["region", "month"], name="dash_us_region_month")],
            },
        ),
        migrations.RunPython(load_sample_data, migrations.RunPython.noop),
    ]

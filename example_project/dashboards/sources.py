"""The dashboard's data sources and the sample data shipped in ``data/*.csv``.

A data source id (what a group's mapping names) is looked up in :data:`DATA_SOURCES`, a
fixed allow-list: the id picks a table, it is never put into SQL itself.
"""

import csv
from pathlib import Path

from django.db import transaction

from example_project.dashboards.models import EuWarehouseSale, UsWarehouseSale

DATA_DIR = Path(__file__).resolve().parent / "data"

#: schema id ``sales``: data source id -> model (whose table holds that source's rows).
DATA_SOURCES = {
    "eu_warehouse": EuWarehouseSale,
    "us_warehouse": UsWarehouseSale,
}


def sample_rows(source_id: str) -> list[dict]:
    """The rows of ``data/<source_id>.csv``: region, product, month, amount (an int)."""
    with open(DATA_DIR / f"{source_id}.csv", newline="", encoding="utf-8") as file:
        return [{**row, "amount": int(row["amount"])} for row in csv.DictReader(file)]


def load_sample_rows(model, source_id: str) -> int:
    """Fill ``model``'s table from the CSV if it is empty; the number of rows added."""
    if model.objects.exists():
        return 0
    rows = [model(**row) for row in sample_rows(source_id)]
    model.objects.bulk_create(rows)
    return len(rows)


def ensure_sample_data() -> int:
    """Every data source filled with its sample rows (idempotent); rows added."""
    with transaction.atomic():
        return sum(load_sample_rows(model, source) for source, model in DATA_SOURCES.items())

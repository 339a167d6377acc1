"""Benchmark-only settings: ``example_project`` as shipped, plus the two baselines.

Baseline (1) and (2) use DRF's ``rest_framework.authtoken``, added here only.
``BENCH_PG_SCHEMA`` puts the tables of one data set (1k, 1m, scratch) in its own
schema of the ``bench`` database.
"""

import os

from example_project.settings import *  # noqa: F403
from example_project.settings import DATABASES, INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "rest_framework.authtoken", "bench.baseline"]
ROOT_URLCONF = "bench.site.urls"

_schema = os.environ.get("BENCH_PG_SCHEMA")
if _schema and DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"].setdefault("OPTIONS", {})["options"] = f"-c search_path={_schema}"

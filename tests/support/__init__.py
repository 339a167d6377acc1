"""What the tests, the CI scripts in .ci/ and the benchmark share: one job a module.

Fixtures stay in conftest.py files; here are plain functions and classes, imported by
name (``from tests.support.api import get_or_create``), so that no test module imports
another test module or a conftest.

- :mod:`tests.support.api`: requests to ``/api/user`` through DRF's test client.
- :mod:`tests.support.db_state`: the stored groups and mappings, to show a request changed
  nothing.
- :mod:`tests.support.factories`: factory-boy factories for every model.
- :mod:`tests.support.admin`: staff clients, admin URLs and form data for the admin tests.
- :mod:`tests.support.leaks`: what a leaked secret looks like, and finding one.
- :mod:`tests.support.log_guard`: the logging handler that catches secrets in log records.
- :mod:`tests.support.deployment`: a project run as deployed: its environment, its
  ``manage.py`` in a subprocess.
- :mod:`tests.support.gunicorn`: that project under gunicorn on a free loopback port.
- :mod:`tests.support.http`: requests to such a server over real HTTP.
- :mod:`tests.support.origins`: web origins of their own on loopback ports (a customer's
  site and its token endpoint) for the browser tests of embed.js.
- :mod:`tests.support.ledger` and :mod:`tests.support.load`: load from clients that keep a
  ledger of what the server told them, checked against the database after faults (the
  fault test in .ci/ and the cluster's).
- :mod:`tests.support.prometheus`: Debian's Prometheus scraping a live server, and its
  query API (tests/test_metrics_live.py).
- :mod:`tests.support.postgres`: the machine's PostgreSQL administered directly (a run's
  database, its groups read with SQL, its backends terminated).
- :mod:`tests.support.cluster`: three app hosts behind HAProxy on PgBouncer and Redis,
  built from :mod:`~tests.support.netns`, :mod:`~tests.support.haproxy` and
  :mod:`~tests.support.pgbouncer`; :mod:`tests.support.throughput` measures it with wrk.

The modules the scripts use (deployment, gunicorn, http) import neither Django nor pytest
at import time, so ``bench`` and ``.ci`` can load them outside a test run.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository: manage.py, example_project
HOST = "127.0.0.1"  # servers started here listen on loopback only, always

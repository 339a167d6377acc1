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

The modules the scripts use (deployment, gunicorn, http) import neither Django nor pytest
at import time, so ``bench`` and ``.ci`` can load them outside a test run.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository: manage.py, example_project
HOST = "127.0.0.1"  # servers started here listen on loopback only, always

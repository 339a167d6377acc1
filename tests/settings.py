"""Test settings: the example project, on the database ``DATABASE_URL`` names."""

import os
import tempfile

os.environ.setdefault("DJANGO_DEBUG", "false")
# The example project requires an origin at every mint in production; the tests mint both
# ways (tests/test_embed_host_views.py turns it on).
os.environ.setdefault("USERGROUPS_EMBED_REQUIRE_ORIGIN", "false")
os.environ.setdefault(
    "DJANGO_SECRET_KEY", "usergroups-tests-only-secret-key-0123456789abcdefghijklmnop"
)

from example_project.settings import *  # noqa: E402,F403
from example_project.settings import DATABASES  # noqa: E402

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file, not memory: tests with threads need one database seen by several connections.
    DATABASES["default"]["TEST"] = {
        "NAME": os.path.join(tempfile.gettempdir(), f"usergroups-test-{os.getpid()}.sqlite3")
    }
# Tests must see each connection open and close cleanly.
DATABASES["default"]["CONN_MAX_AGE"] = 0

"""The example project with the test-only app that holds the widening migration: the
settings of the release that brings the migration, while the server still runs the old."""

from example_project.settings import *  # noqa: F403
from example_project.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "tests.rolling_upgrade"]

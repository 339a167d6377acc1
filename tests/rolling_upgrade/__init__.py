"""A test-only app whose one migration widens columns of the app's tables, as the
migration of a rolling upgrade would; applied while a server runs by
tests/test_rolling_upgrade.py, through ``migrate`` with :mod:`.settings`. PostgreSQL only.
"""

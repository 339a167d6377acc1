# Front doors: `make demo` (serve the example project with a demo key) and `make test`.
# Needs only Python >= 3.11 and make; everything else goes into .venv.

PYTHON ?= python3
VENV ?= .venv
HOST ?= 127.0.0.1
PORT ?= 8000
PYTEST_ARGS ?=

PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check

comma := ,
# The MySQL driver is compiled (needs libmariadb-dev and pkg-config): only when it is used,
# by a MariaDB DATABASE_URL or, under CI=true, by the live race test's own MariaDB database.
TEST_EXTRAS := test$(if $(or $(filter mysql%,$(DATABASE_URL)),$(filter true,$(CI))),$(comma)mysql)

.PHONY: help demo demo-setup test test-deps test-slow lint typecheck tox docs docs-serve clean

help:
	@echo "make demo   create .venv, migrate SQLite, set up a demo API key and webhook, serve on"
	@echo "            $(HOST):$(PORT) with the webhook worker (manage.py db_worker) beside it"
	@echo "make test   create .venv, run the suite but its slow tier (DATABASE_URL picks the database;"
	@echo "            default SQLite); make test-slow: the slow tier (fuzzing, load, browser waits)"
	@echo "make lint   ruff check and ruff format --check"
	@echo "make typecheck  mypy (django-stubs, djangorestframework-stubs) over usergroups/"
	@echo "make tox    the Python x Django matrix of tox.ini, and its lowest/newest releases"
	@echo "            (needs python3.11-3.13; one env: make tox TOX_ARGS=\"-e lowest\")"
	@echo "make docs   build the documentation site (docs/, mkdocs.yml) strictly into site/"
	@echo "make docs-serve  serve the docs on $(HOST):8001, rebuilt as you edit them"
	@echo "make cluster-test  3 app hosts in network namespaces behind HAProxy, on PgBouncer and"
	@echo "            Redis: races, throttling, faults under load, throughput (root; ~5 min)"
	@echo "make clean  remove .venv, .tox, build/, dist/, site/ and the demo database and key"

$(PY):
	$(PYTHON) -m venv $(VENV)

# One stamp per set of extras, redone when pyproject.toml changes.
$(VENV)/.installed-%: pyproject.toml | $(PY)
	$(PIP) install -e ".[$*]"
	@touch $@

# demo_setup reports the key it issues: the app's INFO log line would say it a second time.
demo-setup: $(VENV)/.installed-example
	DJANGO_DEBUG=true $(PY) manage.py migrate --noinput
	DJANGO_DEBUG=true USERGROUPS_LOG_LEVEL=WARNING $(PY) manage.py demo_setup --base-url http://$(HOST):$(PORT)

# The task worker (webhook deliveries, django-tasks-db; no autoreload, whose child would
# outlive the kill below) and the sweeper run beside the server and stop with it.
demo: demo-setup
	@DJANGO_DEBUG=true $(PY) manage.py db_worker --no-reload & worker=$$!; \
	DJANGO_DEBUG=true USERGROUPS_LOG_LEVEL=WARNING $(PY) manage.py sweep_webhooks --every 30 & sweeper=$$!; \
	trap 'kill $$worker $$sweeper 2>/dev/null' EXIT INT TERM; \
	DJANGO_DEBUG=true $(PY) manage.py runserver $(HOST):$(PORT)

# One pytest-xdist worker per core; TEST_WORKERS=0 runs in one process (e.g. for pdb).
# make test leaves out the tests marked `slow` (a few long system tests under load and in
# a browser); make test-slow runs just them; CI runs both. TEST_MARKERS, given, picks the
# tests of either (pytest -m) when given on the command line, as .ci/run does.
TEST_WORKERS ?= auto
TEST_MARKERS ?= not slow
test: $(VENV)/.installed-$(TEST_EXTRAS)
	$(VENV)/bin/pytest -n $(TEST_WORKERS) --dist loadgroup -m "$(TEST_MARKERS)" $(PYTEST_ARGS)

# What make test installs, alone (.ci/run makes it before tox runs beside the suites).
test-deps: $(VENV)/.installed-$(TEST_EXTRAS)

test-slow: TEST_MARKERS = slow
test-slow: $(VENV)/.installed-$(TEST_EXTRAS)
	$(VENV)/bin/pytest -n $(TEST_WORKERS) --dist loadgroup -m "$(TEST_MARKERS)" $(PYTEST_ARGS)

lint: $(VENV)/.installed-lint
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(VENV)/.installed-typecheck
	$(VENV)/bin/mypy

tox: $(PY)
	$(PIP) install -q tox
	$(VENV)/bin/tox $(TOX_ARGS)

# Warnings (a broken link, a page left out of the nav) fail the build.
docs: $(VENV)/.installed-docs
	$(VENV)/bin/mkdocs build --strict --site-dir site

# The docs served with live reload while you edit them: http://$(HOST):$(DOCS_PORT)/
DOCS_PORT ?= 8001
docs-serve: $(VENV)/.installed-docs
	$(VENV)/bin/mkdocs serve --strict --dev-addr $(HOST):$(DOCS_PORT)

clean:
	rm -rf $(VENV) .tox build dist site db.sqlite3 db.sqlite3-wal db.sqlite3-shm .demo-api-key \
		.demo-webhook-secret

# make bench: the app against DRF's authtoken, django-rest-knox and simplejwt, served by
# one site (bench/site) under gunicorn and loaded by wrk, on SQLite and PostgreSQL
# (database `bench` at 127.0.0.1, created if missing; BENCH_PG_URL overrides); see
# bench/__init__.py; then the scale step, in a database of its own (`bench_scale`, dropped
# after; bench/scale.py). Writes bench/RESULTS.md. BENCH_ARGS passes options, e.g.
# BENCH_ARGS="--smoke", BENCH_ARGS="--backends sqlite --only verify --profile verify" or
# BENCH_ARGS="--only scale".
BENCH_ARGS ?=

.PHONY: bench
bench: $(VENV)/.installed-bench
	@command -v wrk >/dev/null 2>&1 || { \
		echo "installing wrk (Debian package)"; \
		$(if $(filter 0,$(shell id -u)),,sudo) apt-get update -qq && \
		$(if $(filter 0,$(shell id -u)),,sudo) apt-get install -y -qq wrk; }
	$(PY) -m bench.run $(BENCH_ARGS)

# make cluster-test: tests/cluster/ (pytest -m cluster) on the cluster of
# tests/support/cluster.py: 3 hosts, each a network namespace running the example project
# under gunicorn, behind HAProxy, on PgBouncer (transaction mode) and Redis. Needs root,
# haproxy, pgbouncer and wrk (Debian's packages), PostgreSQL and Redis on loopback.
# Prints the cluster's figures at the end. Never part of `make test`.
CLUSTER_ARGS ?=

.PHONY: cluster-test
cluster-test: $(VENV)/.installed-test
	$(VENV)/bin/pytest -m cluster tests/cluster -p no:cacheprovider $(CLUSTER_ARGS)

"""``make bench``: django-usergroups against what a Django developer would pick instead.

One site (bench/site: one settings module, Django's ``startproject`` apps and
middleware, persistent connections with ``CONN_HEALTH_CHECKS``) serves the app and every
baseline from the same gunicorn processes (2 sync workers), so that only the view and
its authentication differ between the rows. wrk (8 connections, Lua scripts in
bench/lua) loads it on loopback, on SQLite and on PostgreSQL, each seeded with 1,000
groups through the app's own API. Each round runs every scenario of every
implementation in turn (the order reversed every other round); the report has the
medians of the rounds, and each ratio as the median of its rounds' ratios (its two sides
ran in the same round, seconds apart) with their range, beside its target and the p50
and p99 of both sides:

* get of an existing group / DRF's authtoken ``TokenAuthentication`` on a constant view;
* embed-token verification on a host view / django-rest-knox ``TokenAuthentication``
  (revocable, in the database) and / simplejwt's ``JWTStatelessUserAuthentication``
  (stateless, no revocation), all answering the same variables;
* embed-token minting / a hand-written DRF view signing a simplejwt ``AccessToken``
  with the same claims, EdDSA as the app;
* create, and a rotation chain on one connection, / the authtoken view, against 0.2's
  own ratios (bench/scenarios.py ``V03``);
* on PostgreSQL, what the app's instruments cost (issue 34): its get, verification and
  mint on the site as above, which has the OpenTelemetry API alone (no SDK), and on the
  same site with the SDK and its Prometheus exporter as the example project wires them
  under ``DJANGO_METRICS=true`` (example_project/metrics.py and its gunicorn hooks;
  nothing scrapes ``/metrics`` during the runs), each / the same tree without
  instruments (``BENCH_TELEMETRY=none``: bench/site/no_telemetry.py). Each of the three
  is a gunicorn server of its own, up beside the first for the rounds, its runs in their
  turns as any other.

After the rounds, on PostgreSQL, the instruments' cost in process (bench/instruments.py),
which wrk on a shared machine cannot resolve to 2%: the main thread's CPU a request with
the API alone and without instruments, in short blocks taken in turn, beside a control of
the API alone against itself. Then the propagation of a revocation under load (how long a
revoked token is still served: by SQL, from the commit; through the API, from the
answer); then the webhooks: one ``manage.py db_worker`` delivers the events of mints
to a receiver in the bench process; its throughput, and the lag from commit to arrival.
Last, on PostgreSQL, the scale step (bench/scale.py, issue 32), in a database of its own:
the read model's idle cost at 2 to 64 workers, the verifications that read the database
under churn and CPU pressure, and a worker's memory with 10,000 tokens of a large group.

Modules, one job each: run.py (the command), datasets.py and seed.py (the databases),
driving.py (the server, wrk, the rounds), scenarios.py (what is measured),
instruments.py, propagation.py and webhooks.py (the steps after the rounds), scale.py
(the scale step, its own command too), profiling.py (``--profile``: py-spy on a
worker), reporting.py (the tables, bench/RESULTS.md).
"""

import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
OUT = BENCH / "out"  # databases, server logs, profiles: never committed


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)

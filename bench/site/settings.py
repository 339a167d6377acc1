"""The one site of ``make bench``: the app and every baseline in the same processes.

Django's ``startproject`` defaults (apps, middleware, templates), DRF with the peers the
app is compared with (``rest_framework.authtoken``, ``knox``, ``rest_framework_simplejwt``),
and persistent connections with ``CONN_HEALTH_CHECKS``, so that only the view and its
authentication differ between rows. Webhooks as the example project delivers them: the
database task backend (django-tasks-db; ``manage.py db_worker``), and loopback receivers
allowed (the bench's own). Read from the environment bench/datasets.py gives
each server: ``DATABASE_URL``, ``DJANGO_SECRET_KEY``, ``DJANGO_ALLOWED_HOSTS``,
``BENCH_PG_SCHEMA`` (PostgreSQL: the schema of the run) and ``DATABASE_PREPARE_THRESHOLD``
(PostgreSQL: psycopg's server-side binding and prepared statements, for the whole site);
and, from bench/driving.py, the telemetry of the site (the OpenTelemetry API alone
without either): ``DJANGO_METRICS=true``, the example project's SDK and Prometheus
exporter, or ``BENCH_TELEMETRY=none``, none at all (bench/site/wsgi.py).
"""

import hashlib
import os
from datetime import timedelta

import environ
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

SECRET_KEY = os.environ["DJANGO_SECRET_KEY"]
DEBUG = False
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1").split(",")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "knox",
    "django_tasks_db",
    "usergroups",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "bench.site.urls"
WSGI_APPLICATION = "bench.site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": environ.Env.db_url_config(os.environ["DATABASE_URL"])}
_db = DATABASES["default"]
_db["CONN_MAX_AGE"] = 60
_db["CONN_HEALTH_CHECKS"] = True
if _db["ENGINE"] == "django.db.backends.sqlite3":
    # Two workers write one file (create, rotation): take the write lock up front and
    # wait for it, and let readers go on while one process writes.
    _db["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
else:
    _db["OPTIONS"] = {"options": f"-c search_path={os.environ.get('BENCH_PG_SCHEMA', 'public')}"}
    if threshold := os.environ.get("DATABASE_PREPARE_THRESHOLD"):
        _db["OPTIONS"].update(server_side_binding=True, prepare_threshold=int(threshold))

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
STATIC_URL = "static/"

# simplejwt as the app's embed tokens are by default: EdDSA (Ed25519, one key for every
# worker), the app's default audience and issuer, 15 minutes, the subject in "sub".
_jwt_key = ed25519.Ed25519PrivateKey.from_private_bytes(
    hashlib.sha256(f"bench simplejwt {SECRET_KEY}".encode()).digest()
)
SIMPLE_JWT = {
    "ALGORITHM": "EdDSA",
    "SIGNING_KEY": _jwt_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode(),
    "VERIFYING_KEY": _jwt_key.public_key()
    .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    .decode(),
    "AUDIENCE": "usergroups-embed",
    "ISSUER": "usergroups",
    "USER_ID_CLAIM": "sub",
    "ACCESS_TOKEN_LIFETIME": timedelta(minutes=15),
}

# The example project's task backend; the bench's receiver is on loopback.
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}
USERGROUPS = {"WEBHOOK_ALLOW_PRIVATE": True}

# DJANGO_METRICS=true: the example project's metrics (example_project/metrics.py), the
# switch its gunicorn hooks read too; /metrics in bench/site/urls.py.
METRICS = environ.Env().bool("DJANGO_METRICS", default=False)
if METRICS:
    INSTALLED_APPS.append("example_project.metrics.MetricsConfig")
    METRICS_INTERVAL_SECONDS = 5.0  # the example project's default

# knox as shipped: hashed tokens with a lifetime, looked up in the database on each request.
REST_KNOX = {"TOKEN_TTL": timedelta(hours=10)}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"django.request": {"handlers": ["console"], "level": "ERROR"}},
}

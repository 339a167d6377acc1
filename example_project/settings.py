"""Settings of the example project, read from the environment (django-environ).

``DATABASE_URL`` picks the database (SQLite file in the repo root by default;
``postgres://…`` and ``mysql://…`` work too). ``DJANGO_HTTPS=true`` turns on what
``check --deploy`` asks of a site behind a TLS-terminating proxy. ``DJANGO_METRICS=true``
serves the metrics of every process at ``/metrics`` (``example_project/metrics.py``).
"""

import os
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env(
    DJANGO_DEBUG=(bool, False),
    DJANGO_HTTPS=(bool, False),
    DJANGO_METRICS=(bool, False),
    DJANGO_ALLOWED_HOSTS=(list, ["127.0.0.1", "localhost", "[::1]"]),
)

DEBUG = env("DJANGO_DEBUG")
# Secrets are read verbatim, not through env(): django-environ takes a value that starts
# with "$" for the name of another variable to read instead, and a key made by Django's
# get_random_secret_key() starts with "$" one time in 50.
# A fixed development key only while DEBUG is on; production must set its own.
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or (
    "django-insecure-usergroups-example-only-change-me-0123456789" if DEBUG else None
)
# Old keys, comma-separated, while rotating DJANGO_SECRET_KEY (see README: Security model).
SECRET_KEY_FALLBACKS = [
    key for key in os.environ.get("DJANGO_SECRET_KEY_FALLBACKS", "").split(",") if key
]
ALLOWED_HOSTS = env("DJANGO_ALLOWED_HOSTS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "usergroups",
    "django_tasks_db",  # the TASKS backend below: manage.py db_worker delivers webhooks
    "example_project.demo",  # manage.py demo_setup, for make demo
    "example_project.dashboards",  # the embed flow: /demo/, /embed/dashboard/
]

# The OpenTelemetry SDK in every process, all of their metrics at /metrics: each process
# writes its own file into PROMETHEUS_MULTIPROC_DIR, which gunicorn.conf.py makes (or
# empties) before the workers start; another server must name an empty directory.
METRICS = env("DJANGO_METRICS")
METRICS_INTERVAL_SECONDS = env.float("DJANGO_METRICS_INTERVAL_SECONDS", default=5.0)
if METRICS:
    if not os.path.isdir(os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")):
        raise ImproperlyConfigured(
            "DJANGO_METRICS=true needs PROMETHEUS_MULTIPROC_DIR to name a directory (run "
            "gunicorn with -c example_project/gunicorn.conf.py, which makes one)."
        )
    INSTALLED_APPS.append("example_project.metrics.MetricsConfig")

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "example_project.urls"
WSGI_APPLICATION = "example_project.wsgi.application"

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

# An empty DATABASE_URL counts as unset.
DATABASES = {
    "default": env.db_url_config(
        env.str("DATABASE_URL", default="") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}"
    )
}
_db = DATABASES["default"]
if _db["ENGINE"] == "django.db.backends.sqlite3":
    # Several server processes share one SQLite file: IMMEDIATE transactions take the
    # write lock up front and the busy timeout waits for it, instead of "database is locked";
    # WAL lets readers go on while one process writes.
    _db.setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
elif _db["ENGINE"] == "django.db.backends.mysql":
    _db.setdefault("OPTIONS", {}).update({"charset": "utf8mb4"})
    _db.setdefault("TEST", {}).update({"CHARSET": "utf8mb4", "COLLATION": "utf8mb4_unicode_ci"})
if _db["ENGINE"] == "django.db.backends.postgresql" and env.bool("DATABASE_POOL", default=False):
    # Django's psycopg pool instead of persistent connections (which stay the default:
    # with sync workers they answered faster in bench/RESULTS.md). Pooling excludes them.
    _db.setdefault("OPTIONS", {})["pool"] = {"min_size": 1, "max_size": 4}
    _db["CONN_MAX_AGE"] = 0
# Options in DATABASE_URL's query string win over these (?conn_max_age=0); behind PgBouncer
# in transaction mode add ?disable_server_side_cursors=True (docs/deployment.md).
_db.setdefault("CONN_MAX_AGE", env.int("DATABASE_CONN_MAX_AGE", default=60))
_db.setdefault("CONN_HEALTH_CHECKS", True)
# Behind PgBouncer in transaction mode: a direct connection to PostgreSQL for the read
# model's LISTEN (USERGROUPS["LISTEN_DATABASE"] below), e.g. postgres://app@db:5432/app.
if _listen_url := env.str("DATABASE_LISTEN_URL", default=""):
    DATABASES["listen"] = env.db_url_config(_listen_url)

# DJANGO_CACHE_URL (django-environ), e.g. redis://127.0.0.1:6379/0?key_prefix=api: the cache
# shared by the hosts, which throttling needs. Per process by default.
CACHES = {"default": env.cache_url("DJANGO_CACHE_URL", default="locmemcache://")}
for _option in ("key_prefix", "timeout", "version"):
    # django-environ leaves these in lower case for Django's own Redis backend, which
    # reads them only in upper case.
    if _option in CACHES["default"]:
        CACHES["default"][_option.upper()] = CACHES["default"].pop(_option)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The app's schema class: drf-spectacular's, and the answers of the app's authentication
# classes on the site's own views (docs/host-views.md).
REST_FRAMEWORK = {"DEFAULT_SCHEMA_CLASS": "usergroups.api.openapi.UserGroupAutoSchema"}
SPECTACULAR_SETTINGS = {
    "TITLE": "User group service",
    "DESCRIPTION": "Get or create user groups and rotate their tokens (django-usergroups).",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # 3.1 is JSON Schema: it can state the rules on the keys of mappings and properties
    # (propertyNames) that 3.0 leaves to words (usergroups.api.openapi).
    "OAS_VERSION": "3.1.0",
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"

# Webhook deliveries (and any other task) wait in the database for `manage.py db_worker`.
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}

USERGROUPS = {
    "ROTATION_GRACE_SECONDS": env.int("USERGROUPS_ROTATION_GRACE_SECONDS", default=0),
    # e.g. "600/minute", counted in the default cache; empty: no throttling.
    "THROTTLE_RATE": env.str("USERGROUPS_THROTTLE_RATE", default="") or None,
    # Every mint must name the page's origin (check --deploy warns without): on in
    # production unless said otherwise, off while debugging (the demo mints with one anyway).
    "EMBED_REQUIRE_ORIGIN": env.bool("USERGROUPS_EMBED_REQUIRE_ORIGIN", default=not DEBUG),
    # http and private or loopback webhook URLs (the demo's receiver on 127.0.0.1): on
    # while debugging unless said otherwise, never in production by default.
    "WEBHOOK_ALLOW_PRIVATE": env.bool("DJANGO_WEBHOOK_ALLOW_PRIVATE", default=DEBUG),
    # The read model (docs/deployment.md): "auto" on PostgreSQL; false turns it off.
    "READ_MODEL": "auto" if env.bool("USERGROUPS_READ_MODEL", default=True) else False,
    "LISTEN_DATABASE": "listen" if "listen" in DATABASES else None,
}
# Seconds, for tests that want deliveries and retries fast (numbers, not only integers).
for _name in ("CONNECT_TIMEOUT", "TIMEOUT", "RETRY_BASE", "RETRY_MAX", "LEASE"):
    if _value := os.environ.get(f"USERGROUPS_WEBHOOK_{_name}_SECONDS"):
        USERGROUPS[f"WEBHOOK_{_name}_SECONDS"] = float(_value)
for _name in ("MAX_ATTEMPTS", "DISABLE_AFTER_FAILURES", "ATTEMPTS_IN_FLIGHT"):
    if _value := os.environ.get(f"USERGROUPS_WEBHOOK_{_name}"):
        USERGROUPS[f"WEBHOOK_{_name}"] = int(_value)

# The demo customer site (/demo/) mints embed tokens that live this long (seconds, 30 at
# least): short, so that the dashboard's refresh without reloading is seen in a minute.
DASHBOARDS_EMBED_TOKEN_SECONDS = env.int("DASHBOARDS_EMBED_TOKEN_SECONDS", default=60)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"require_debug_false": {"()": "django.utils.log.RequireDebugFalse"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler"},
        # Server errors with their traceback. Django's own console handler prints only
        # while DEBUG is on and mail_admins needs ADMINS: without this handler a
        # production server answers 500 and logs nothing.
        "server_errors": {
            "class": "logging.StreamHandler",
            "level": "ERROR",
            "filters": ["require_debug_false"],
        },
    },
    "loggers": {
        "usergroups": {
            "handlers": ["console"],
            "level": env("USERGROUPS_LOG_LEVEL", default="INFO"),
        },
        "django.request": {"handlers": ["server_errors"]},
    },
}

if env("DJANGO_HTTPS"):
    SECURE_SSL_REDIRECT = True
    SECURE_REDIRECT_EXEMPT = [r"^health$"]  # the load balancer checks over plain HTTP
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = 60 * 60 * 24 * 365
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

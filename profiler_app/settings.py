"""Django settings. Every value comes from the environment (see profiler_app.lib.env)."""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from profiler_app.lib.env import envbool, envfloat, envint, envlist, envpath, envstr
from profiler_app.metrics.access import parse_networks
from profiler_app.metrics.files import metrics_folder

BASE_DIR = Path(__file__).resolve().parent.parent
# Everything this server writes (raw profiles, timeline stores, the secret key) is private to
# its user: files 0600, folders 0700.
os.umask(0o077)
DATA_DIR = envpath("PROFILER_DATA_DIR", BASE_DIR / "var")
# /metrics sums the request counts of every web process from their files here, in memory
# (profiler_app.metrics.files; prometheus_client reads the variable when it is first imported,
# which INSTALLED_APPS does below).
os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", str(metrics_folder(DATA_DIR)))
Path(os.environ["PROMETHEUS_MULTIPROC_DIR"]).mkdir(parents=True, exist_ok=True)

DEBUG = envbool("DEBUG", False)
SECRET_KEY = envstr("SECRET_KEY")
if not SECRET_KEY:
    # A per-installation key kept in the data directory, so sessions survive restarts.
    key_file = DATA_DIR / "secret_key"
    if not key_file.exists():
        from django.core.management.utils import get_random_secret_key

        DATA_DIR.mkdir(parents=True, exist_ok=True)
        key_file.write_text(get_random_secret_key())
        key_file.chmod(0o600)
    SECRET_KEY = key_file.read_text().strip()

ALLOWED_HOSTS = envstr("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver").split(",")
CSRF_TRUSTED_ORIGINS = [o for o in envstr("CSRF_TRUSTED_ORIGINS").split(",") if o]

INSTALLED_APPS = [
    "profiler_app.accounts.apps.AdminConfig",  # django.contrib.admin, its sign-in throttled
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "knox",
    "django_filters",
    "drf_spectacular",
    "django_prometheus",
    "profiler_app.core",
    "profiler_app.accounts",
    "profiler_app.profiles",
    "profiler_app.ingest",
    "profiler_app.dashboard",
    "profiler_app.timeline",
    "profiler_app.insights",
    "profiler_app.cluster",
    "profiler_app.memory",
    "profiler_app.sql",
    "profiler_app.calltree",
    "profiler_app.history",
]

MIDDLEWARE = [
    # Request counts and latencies for /metrics: first and last, to time the whole answer.
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "profiler_app.core.middleware.UserActivityMiddleware",
    "profiler_app.core.middleware.RefuseNulInQueryMiddleware",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
]

ROOT_URLCONF = "profiler_app.urls"
WSGI_APPLICATION = "profiler_app.wsgi.application"

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
            ]
        },
    }
]


DATABASE_URL = os.environ.get("DATABASE_URL", "")
REDIS_URL = os.environ.get("REDIS_URL", "")
if not DATABASE_URL or not REDIS_URL:
    raise ImproperlyConfigured(
        "DATABASE_URL and REDIS_URL are not set. Start the app with `profiler-app up` (or "
        "`python manage.py …`), which starts embedded PostgreSQL and Redis, or set both."
    )
# pgserver's URLs name the unix socket directory in ?host=, which psycopg reads from OPTIONS.
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL,
        conn_max_age=envint("DB_CONN_MAX_AGE", 60),
        conn_health_checks=True,
        test_options={"NAME": envstr("TEST_DATABASE_NAME") or None},
    )
}
if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
    raise ImproperlyConfigured("DATABASE_URL must be a postgres:// URL")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
FRONTEND_DIST = BASE_DIR / "frontend" / "dist"
STATICFILES_DIRS = [FRONTEND_DIST] if FRONTEND_DIST.exists() else []
STORAGES: dict[str, dict] = {
    "default": {"BACKEND": "profiler_app.core.storage.WholeFileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
MEDIA_ROOT = envpath("PROFILER_MEDIA_ROOT", DATA_DIR / "media")
# Where profiles live (profiler_app.core.storage): unset, under MEDIA_ROOT; "s3://bucket/prefix",
# in that S3-compatible bucket (endpoint, region and credentials from the usual AWS_* variables),
# each process keeping the store files it reads in a size-bounded cache of its own.
STORAGE_URL = envstr("PROFILER_STORAGE_URL")
STORE_CACHE_DIR = envpath("PROFILER_CACHE_DIR", DATA_DIR / "cache")
STORE_CACHE_BYTES = envint("PROFILER_CACHE_MB", 20480) * 1024**2
if STORAGE_URL:
    from profiler_app.lib.bucket_url import django_storage_options

    STORAGES["default"] = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": django_storage_options(STORAGE_URL),
    }
MEDIA_URL = "/media/"

# Uploads: anything larger than this streams to a temp file instead of memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = 8 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 16 * 1024 * 1024
FILE_UPLOAD_TEMP_DIR = str(DATA_DIR / "tmp")
FILE_UPLOAD_HANDLERS = [
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "profiler_app.core.parsers.ScratchFileUploadHandler",  # removed at once when a write fails
]
FILE_UPLOAD_PERMISSIONS = 0o600
FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o700
Path(FILE_UPLOAD_TEMP_DIR).mkdir(parents=True, exist_ok=True)
PROFILE_UPLOAD_MAX_BYTES = envint("PROFILE_UPLOAD_MAX_BYTES", 20 * 1024**3)
# Parsing refuses a trace that inflates beyond this (a gzip bomb fails its part, not the worker).
TRACE_MAX_DECOMPRESSED_BYTES = envint("TRACE_MAX_DECOMPRESSED_BYTES", 64 * 1024**3)
# Extra decoder processes per parse; 0 decodes in the worker process itself.
TRACE_PARSE_PROCESSES = envint("TRACE_PARSE_PROCESSES", 0)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first, so anonymous callers get 401 with a WWW-Authenticate header.
        "profiler_app.accounts.auth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "profiler_app.core.parsers.StrictJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_SCHEMA_CLASS": "profiler_app.core.schema.AutoSchema",
    "EXCEPTION_HANDLER": "profiler_app.core.errors.exception_handler",
    # Client addresses for the login throttle: REMOTE_ADDR unless NUM_PROXIES proxies sit in
    # front (X-Forwarded-For is trusted that far only; a client could forge the rest).
    "NUM_PROXIES": envint("NUM_PROXIES", 0),
    "DEFAULT_THROTTLE_RATES": {
        # Wrong passwords, API and admin form alike (core/throttles.py): per account, and per
        # address a bound a whole team behind one NAT does not reach.
        "login_account": envstr("THROTTLE_LOGIN_ACCOUNT", "10/hour"),
        "login_address": envstr("THROTTLE_LOGIN_ADDRESS", "100/hour"),
        "demo": envstr("THROTTLE_DEMO", "6/hour"),
        "reprocess": envstr("THROTTLE_REPROCESS", "300/hour"),
        "export": envstr("THROTTLE_EXPORT", "60/hour"),
    },
}

# API tokens (django-rest-knox): stored as digests, sent as `Authorization: Token <key>`, and
# valid until revoked unless their owner gave them an expiry.
KNOX_TOKEN_MODEL = "accounts.ApiToken"
REST_KNOX = {"TOKEN_TTL": None, "AUTH_HEADER_PREFIX": "Token"}
# knox's migrations would create its own token table even though accounts.ApiToken replaces it,
# and an unknown table that references auth_user keeps Django from flushing the database.
MIGRATION_MODULES = {"knox": None}

SPECTACULAR_SETTINGS = {
    "TITLE": "profiler-app API",
    "DESCRIPTION": "Training jobs, profile uploads, aggregates and settings.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Two fields named "kind": a part's and a capture window's.
    "ENUM_NAME_OVERRIDES": {
        "KindEnum": "profiler_app.core.models.PartKind",
        "CaptureWindowKindEnum": "profiler_app.traces.capture.WINDOW_KINDS",
    },
}

# GET /metrics (docs/metrics.md): read with METRICS_TOKEN as a Bearer token, or from the
# addresses in METRICS_ALLOWED_IPS (addresses or networks, comma-separated); neither set: by
# nobody.
METRICS_TOKEN = envstr("METRICS_TOKEN")
METRICS_ALLOWED_IPS = envstr("METRICS_ALLOWED_IPS")
parse_networks(METRICS_ALLOWED_IPS)  # a bad value fails at start-up, not at the first scrape

LOGIN_URL = "/login"

# Sign-in through the team's identity provider (OpenID Connect: accounts/oidc.py, README
# "Single sign-on"), beside local accounts; on when OIDC_CLIENT_ID is set. The endpoints come
# from OIDC_ISSUER's discovery document unless each is set.
OIDC_RP_CLIENT_ID = envstr("OIDC_CLIENT_ID")
OIDC_RP_CLIENT_SECRET = envstr("OIDC_CLIENT_SECRET")
OIDC_ISSUER = envstr("OIDC_ISSUER")
OIDC_OP_AUTHORIZATION_ENDPOINT = envstr("OIDC_AUTHORIZATION_ENDPOINT")
OIDC_OP_TOKEN_ENDPOINT = envstr("OIDC_TOKEN_ENDPOINT")
OIDC_OP_USER_ENDPOINT = envstr("OIDC_USERINFO_ENDPOINT")
OIDC_OP_JWKS_ENDPOINT = envstr("OIDC_JWKS_URI")
if (
    OIDC_RP_CLIENT_ID
    and not OIDC_ISSUER
    and not (OIDC_OP_AUTHORIZATION_ENDPOINT and OIDC_OP_TOKEN_ENDPOINT and OIDC_OP_USER_ENDPOINT)
):
    raise ImproperlyConfigured(
        "OIDC_CLIENT_ID is set: set OIDC_ISSUER too (or OIDC_AUTHORIZATION_ENDPOINT, "
        "OIDC_TOKEN_ENDPOINT, OIDC_USERINFO_ENDPOINT and OIDC_JWKS_URI)"
    )
if OIDC_ISSUER and not OIDC_RP_CLIENT_ID:
    raise ImproperlyConfigured("OIDC_ISSUER is set without OIDC_CLIENT_ID")
OIDC_PROVIDER_NAME = envstr("OIDC_PROVIDER_NAME") or "single sign-on"
OIDC_RP_SCOPES = envstr("OIDC_SCOPES") or "openid email profile"
OIDC_RP_SIGN_ALGO = envstr("OIDC_SIGN_ALGO") or "RS256"
# The claim whose values (a list or one string: groups, roles, hd, email) name who is staff
# and, when OIDC_ALLOWED_GROUPS is set, who may sign in at all. With no staff groups, the staff
# flag stays as an admin sets it.
OIDC_GROUPS_CLAIM = envstr("OIDC_GROUPS_CLAIM") or "groups"
OIDC_STAFF_GROUPS = envlist("OIDC_STAFF_GROUPS")
OIDC_ALLOWED_GROUPS = envlist("OIDC_ALLOWED_GROUPS")
OIDC_ALLOWED_DOMAINS = envlist("OIDC_ALLOWED_DOMAINS")
OIDC_TIMEOUT = envfloat("OIDC_TIMEOUT_S", 10.0)
OIDC_USE_PKCE = True
OIDC_TOKEN_USE_BASIC_AUTH = True  # client_secret_basic, every provider's default
LOGIN_REDIRECT_URL = "/"
LOGIN_REDIRECT_URL_FAILURE = "/login?sso=failed"  # the login page says so
# Behind a proxy that ends TLS: the scheme it forwards, so that the addresses the server gives
# out (the redirect_uri the provider checks) start with https like the browser's.
if envbool("TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "profiler_app.accounts.oidc.ProviderBackend",
]

# Celery: a Redis broker; queue names are prefixed so parallel test runs never share a queue.
CELERY_QUEUE_PREFIX = envstr("CELERY_QUEUE_PREFIX")
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_DEFAULT_QUEUE = f"{CELERY_QUEUE_PREFIX}default"
# The recovery sweeps and the health count are quick and must never wait behind parses or
# insights runs: they have a queue of their own, which a one-process sweeper (``profiler-app
# sweeper``) consumes alone; workers take from it too, so a lone worker still runs them.
CELERY_SWEEP_QUEUE = f"{CELERY_QUEUE_PREFIX}sweep"
CELERY_TASK_ROUTES = {
    "profiler_app.ingest.tasks.sweep_unfinished_parts": {"queue": CELERY_SWEEP_QUEUE},
    "profiler_app.insights.tasks.queue_missing_insights": {"queue": CELERY_SWEEP_QUEUE},
    "profiler_app.history.tasks.queue_missing_verdicts": {"queue": CELERY_SWEEP_QUEUE},
    "profiler_app.core.tasks.record_workers": {"queue": CELERY_SWEEP_QUEUE},
    "profiler_app.core.tasks.check_idle_shutdown": {"queue": CELERY_SWEEP_QUEUE},
    "profiler_app.ingest.tasks.*": {"queue": f"{CELERY_QUEUE_PREFIX}ingest"},
    # Upgrading a store (its index, its model columns) holds a whole part in memory, like a
    # parse: it runs where parses do.
    "profiler_app.profiles.tasks.*": {"queue": f"{CELERY_QUEUE_PREFIX}ingest"},
    # Reading a rank for its insights holds the rank in memory, like a parse.
    "profiler_app.insights.tasks.prepare_rank": {"queue": f"{CELERY_QUEUE_PREFIX}ingest"},
}
# What a worker consumes, unprefixed (a test's worker with a prefix of its own names them too).
WORKER_QUEUE_NAMES = ("default", "ingest", "sweep")
CELERY_WORKER_QUEUES = [f"{CELERY_QUEUE_PREFIX}{name}" for name in WORKER_QUEUE_NAMES]
# The sweeper's Celery node name starts with this; the health check's worker count leaves it out.
SWEEPER_NAME = "sweeper"
CELERY_TASK_ACKS_LATE = True
# A broker outage of any length is waited out: the worker and beat reconnect, never exit.
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Memory: each pool process may hold WORKER_MEMORY_LIMIT_MB (past it a parse fails with a
# clear message; 0: no ceiling), and one that has grown past WORKER_RECYCLE_MB after a task is
# replaced by a fresh one.
WORKER_MEMORY_LIMIT_MB = envint("WORKER_MEMORY_LIMIT_MB", 8192)
# The worker's niceness (profiler-app worker runs it under `nice`): 0 shares the CPU evenly with
# the web, 10 lets pages answer first when both want it.
WORKER_NICE = envint("WORKER_NICE", 10)
CELERY_WORKER_MAX_MEMORY_PER_CHILD = envint("WORKER_RECYCLE_MB", 2048) * 1024  # KiB
# A parse can run for minutes; the broker must not hand the task to another worker meanwhile.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 6 * 3600}
# How often beat counts the workers (anonymous health checks read that count).
HEALTH_WORKERS_SECONDS = envint("HEALTH_WORKERS_SECONDS", 30)
INGEST_SWEEP_SECONDS = envfloat("INGEST_SWEEP_SECONDS", 15.0)
CELERY_BEAT_SCHEDULE = {
    "auto-shutdown-check": {
        "task": "profiler_app.core.tasks.check_idle_shutdown",
        "schedule": envint("IDLE_CHECK_SECONDS", 60),
    },
    "health-workers": {
        "task": "profiler_app.core.tasks.record_workers",
        "schedule": HEALTH_WORKERS_SECONDS,
    },
    "end-silent-jobs": {
        "task": "profiler_app.core.tasks.end_silent_jobs",
        "schedule": 60,
    },
    "uploads-cleanup": {
        "task": "profiler_app.core.tasks.remove_abandoned_uploads",
        "schedule": 3600,
    },
    # Retention (off until staff set day counts on the Settings page).
    "retention": {
        "task": "profiler_app.core.tasks.apply_retention",
        "schedule": 24 * 3600,
    },
    # Lost parses and insights runs are queued again within a minute of their fault ending; a
    # sweep not run within its period is dropped (the next one does its work).
    "ingest-sweep": {
        "task": "profiler_app.ingest.tasks.sweep_unfinished_parts",
        "schedule": INGEST_SWEEP_SECONDS,
        "options": {"expires": INGEST_SWEEP_SECONDS},
    },
    # Stores of an older format (or an older index version) are upgraded; readers never are.
    "store-upgrade-sweep": {
        "task": "profiler_app.profiles.tasks.upgrade_stores",
        "schedule": 600,
    },
    "insights-sweep": {
        "task": "profiler_app.insights.tasks.queue_missing_insights",
        "schedule": INGEST_SWEEP_SECONDS,
        "options": {"expires": INGEST_SWEEP_SECONDS},
    },
    # Parsed jobs without a current regression verdict are judged (docs/history.md).
    "history-sweep": {
        "task": "profiler_app.history.tasks.queue_missing_verdicts",
        "schedule": envint("HISTORY_SWEEP_SECONDS", 60),
        "options": {"expires": envint("HISTORY_SWEEP_SECONDS", 60)},
    },
}
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
# A part (or insights run) with no sign of life for this long is queued again: its queueing
# was lost, or its worker died. A running task stamps its row every INGEST_HEARTBEAT_SECONDS.
INGEST_STALL_SECONDS = envfloat("INGEST_STALL_SECONDS", 30.0)
INGEST_HEARTBEAT_SECONDS = envfloat("INGEST_HEARTBEAT_SECONDS", 1.0)
# A collector job still marked as being sent that has sent nothing for this long ended without
# a final status (its process was killed or crashed): it is ended as Stopped and judged.
COLLECTOR_SILENCE_MINUTES = envfloat("COLLECTOR_SILENCE_MINUTES", 30.0)
# A resumable upload that no byte reached for this long is removed with its temp file.
UPLOAD_ABANDON_HOURS = envfloat("UPLOAD_ABANDON_HOURS", 24.0)
# An unfinished upload that no byte reached for this long shows as interrupted: its owner may
# finish or abandon it (a sender's retries wait far less between tries).
UPLOAD_STALL_SECONDS = envfloat("UPLOAD_STALL_SECONDS", 120.0)
# A part whose parse killed its worker this many times fails instead of being retried.
INGEST_MAX_PARSE_ATTEMPTS = envint("INGEST_MAX_PARSE_ATTEMPTS", 3)
# Past this many seconds of parsing waiting (the queue over the recent pace), new parts are
# answered 429 with Retry-After and their senders try again later (core.admission); 0: never.
INGEST_MAX_BACKLOG_SECONDS = envfloat("INGEST_MAX_BACKLOG_SECONDS", 120.0)
# A parse that cannot reach the storage bucket tries again for this long, then fails saying so
# (with its last try and the cleanup's, within a minute at the bucket's default timeouts).
INGEST_BUCKET_RETRY_SECONDS = envfloat("INGEST_BUCKET_RETRY_SECONDS", 30.0)

# Shared by every web and worker process: throttle counters, the demo slot, the worker count.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL.replace("redis+socket://", "unix://", 1),
        "KEY_PREFIX": CELERY_QUEUE_PREFIX,
    }
}

# SQL console (profiler_app.sql): each query's time, row, answer size, memory and thread
# bounds, and how many run at once in one web process. The memory limit is DuckDB's (nothing
# spills); each query runs in a process of its own, see docs/sql.md.
SQL_TIMEOUT_S = envfloat("SQL_TIMEOUT_S", 10.0)
SQL_MAX_ROWS = envint("SQL_MAX_ROWS", 10_000)
SQL_MAX_BYTES = envint("SQL_MAX_BYTES", 16 * 2**20)
SQL_MEMORY_LIMIT = envstr("SQL_MEMORY_LIMIT", "256MB")
SQL_THREADS = envint("SQL_THREADS", 2)
SQL_MAX_CONCURRENT = envint("SQL_MAX_CONCURRENT", 2)
# Each query runs in a child process whose memory beyond the console's code is capped at this
# (RLIMIT_DATA): DuckDB's memory limit does not bound the strings a query builds.
SQL_PROCESS_MEMORY_MB = envint("SQL_PROCESS_MEMORY_MB", 512)
# Downloads: a timeline export (streamed) and a report page answer at most this many bytes;
# larger ones are refused with 413 (an export that reaches it unforeseen ends, saying so).
EXPORT_MAX_BYTES = envint("EXPORT_MAX_MB", 2048) * 2**20
REPORT_MAX_BYTES = envint("REPORT_MAX_MB", 64) * 2**20
# Insights re-run this long after the last part of a burst arrives (one run per burst).
INSIGHTS_DEBOUNCE_S = envfloat("INSIGHTS_DEBOUNCE_S", 3.0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
    "loggers": {"pgserver": {"level": "WARNING"}},
}

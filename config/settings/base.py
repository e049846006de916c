"""Settings shared by every deployment; everything that differs between machines comes from the environment.

Defaults give the embedded mode (README.md, Quick start): SQLite (WAL) and Celery's filesystem broker under
`var/`, a local-memory cache. `DATABASE_URL` and `REDIS_URL` switch to PostgreSQL and Redis.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import environ

from .parsing import json_env

BASE_DIR = Path(__file__).resolve().parent.parent.parent
env = environ.Env()
VAR_DIR = Path(env.str("KASSA_VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env.bool("DEBUG", default=False)
# No fallback here: dev.py and test.py keep development keys under var/; production refuses to start
# without strong ones (payments/checks.py).
SECRET_KEY = env.str("SECRET_KEY", default="")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

PORT = env.int("PORT", default=8000)
BASE_URL = env.str("BASE_URL", default=f"http://127.0.0.1:{PORT}").rstrip("/")
PAY_URL = env.str("PAY_URL", default=BASE_URL).rstrip("/")

# Signing secrets are encrypted with this key (Fernet, urlsafe base64 of 32 bytes); see core/keys.py.
FIELD_ENCRYPTION_KEY = env.str("FIELD_ENCRYPTION_KEY", default="")
# Production settings turn this on: every process refuses to start while a `kassa_deploy` check fails.
KASSA_STARTUP_CHECKS = False
# `manage.py demo_merchant` (a published password) runs only where this is on: development and tests.
DEMO_MERCHANT_ALLOWED = False

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "payments",
    "chains",
    "alerts",
    "webhooks",
    "invoices",
    "withdrawals",
    "security",
    "accounts",
    "notifications",
    # Last: its ready() runs once every app above has registered its deployment checks (core.checks).
    "core",
]

MIDDLEWARE = [
    "core.request_id.RequestIdMiddleware",  # first: X-Request-ID on every response, the access-log line
    "config.metrics.middleware.MetricsMiddleware",  # before the rest: counts and times every answer
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",  # Content-Security-Policy: see "Security headers" below
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "security.middleware.IdleTimeoutMiddleware",  # after auth and messages: idle logout, 2FA enrolment
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.i18n",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------------------
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'kassa.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web, worker and beat write side by side: WAL lets readers run during a write, IMMEDIATE takes the
    # write lock at BEGIN (no deadlock-prone lock upgrade), and the timeout waits instead of failing.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
        }
    )
else:
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    # Prepared statements: psycopg binds values on the server and prepares a statement once it has run a few
    # times on a connection, so PostgreSQL plans each hot statement once per connection instead of on every
    # call (planning cost more than executing for most of them: docs/benchmarks.md). Off for a
    # pooler that cannot carry prepared statements across transactions (PgBouncer in transaction mode
    # before 1.21, or without max_prepared_statements).
    if env.bool("DATABASE_PREPARED_STATEMENTS", default=True):
        DATABASES["default"].setdefault("OPTIONS", {}).update(server_side_binding=True, prepare_threshold=5)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Broker and cache -----------------------------------------------------------------------------------
REDIS_URL = env.str("REDIS_URL", default="")
CELERY_BROKER_DIR = VAR_DIR / "broker"
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS: dict = {
        "visibility_timeout": 3600,
        # A publish to a Redis that is down or unreachable fails within seconds: the request that committed
        # answers at once, and the database pollers publish the work again later.
        "socket_connect_timeout": 2,
        "socket_timeout": 5,
    }
    CACHES = {
        "default": {
            "BACKEND": "core.cache.RedisCache",  # Django's, reusing its Redis client (core/cache.py)
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "kassa",
            # As the broker's: a Redis that is down or unreachable fails a cache call within seconds.
            "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 5},
        }
    }
else:
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        # One folder for both directions: every process of this machine reads and writes the same queue.
        "data_folder_in": str(CELERY_BROKER_DIR / "queue"),
        "data_folder_out": str(CELERY_BROKER_DIR / "queue"),
        "processed_folder": str(CELERY_BROKER_DIR / "processed"),
        # The exchange tables too, or kombu writes them to ./control in whatever folder a process starts in.
        "control_folder": str(CELERY_BROKER_DIR / "control"),
        "store_processed": False,
        # A worker finds a new message by listing the folder, then sleeps this long when every queue was
        # empty (kombu's default: 1 s). Each hop of a webhook (the dispatcher's wake-up, its delivery
        # message, the next event of its object released) waited up to that; a listing costs microseconds.
        "polling_interval": 0.1,
    }
    for folder in ("queue", "processed", "control"):
        (CELERY_BROKER_DIR / folder).mkdir(parents=True, exist_ok=True)
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# A broker that is down: a publish gives up after ~1 s (its work is in the database, core/celery_task.py).
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.3,
    "interval_max": 0.5,
}
# One queue per kind of work, so a slow webhook receiver can never hold the worker slots payouts need. The
# production layout: a worker for `webhooks`, one for `payouts,chain,housekeeping` (docs/operations.md).
CELERY_TASK_QUEUE_NAMES = ("webhooks", "payouts", "chain", "housekeeping")
CELERY_TASK_DEFAULT_QUEUE = "housekeeping"
CELERY_TASK_ROUTES = {
    "webhooks.tasks.*": {"queue": "webhooks"},
    "withdrawals.tasks.payout_plan": {"queue": "payouts"},
    "withdrawals.tasks.payout_broadcast": {"queue": "payouts"},
    "withdrawals.tasks.payout_monitor_all": {"queue": "payouts"},
    "withdrawals.tasks.auto_withdrawal_sweep_due": {"queue": "payouts"},
    "chains.tasks.*": {"queue": "chain"},
    "invoices.tasks.*": {"queue": "housekeeping"},
    "withdrawals.tasks.idempotency_keys_purge": {"queue": "housekeeping"},
    "notifications.tasks.*": {"queue": "housekeeping"},  # as alerts' e-mail: the default queue
}
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Celery's Django fixup closes every database connection before and after each task unless this is set: a
# webhook delivery then paid a new PostgreSQL connection each time (half its time in `make bench`). With it,
# the fixup closes them every this many tasks, and config.celery closes one around each task only when
# CONN_MAX_AGE or CONN_HEALTH_CHECKS say so, as Django does around each request.
CELERY_DB_REUSE_MAX = 1000
CELERY_TASK_IGNORE_RESULT = True
# A worker told to stop (SIGTERM, SIGINT) waits this long for its running tasks, then kills them and exits
# (config.celery): a task that hangs never keeps a worker, or its broker's files, alive.
WORKER_SHUTDOWN_SECONDS = env.float("WORKER_SHUTDOWN_SECONDS", default=20)
# Tasks that take their work from the database (the webhook dispatcher, the payout planner) are woken by one
# waiting message, not one per commit (core/wakeup.py): a flag in the cache says a message waits, so the
# cache must be shared by every process, which Redis is and local memory is not.
WAKE_COALESCE = bool(REDIS_URL)
WAKE_TTL_SECONDS = 30
# A web process sends the wake-ups of its commits at most once per this many seconds (core.wakeup): the
# first of a quiet spell at once, the rest together at the end of the window. 0 sends each at its commit.
WAKE_DEBOUNCE_SECONDS = env.float("WAKE_DEBOUNCE_SECONDS", default=0.05)
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE: dict = {}


def _beat(name: str, task: str, seconds: float) -> None:
    """A beat entry: `task` (its dotted name) every `seconds`."""
    CELERY_BEAT_SCHEDULE[name] = {"task": task, "schedule": seconds}


# --- Auth, i18n, static ---------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "/dashboard/login/"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("es", "Español"), ("ru", "Русский")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)  # WhiteNoise warns at start-up when it is missing
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")
# The mail server as one URL, e.g. smtp+tls://user:password@smtp.example.com:587 (django-environ's schemes:
# smtp, smtp+tls, smtp+ssl, smtps, ...); it sets the backend, host, port, credentials and TLS together.
# EMAIL_URL=off: no e-mail at all; nothing is sent, and the sign-up and password-reset pages say to ask the
# operator. Production refuses a backend that keeps mail on this machine (console, file, memory: kassa.E011).
EMAIL_ENABLED = env.str("EMAIL_URL", default="").strip().lower() != "off"
if not EMAIL_ENABLED:
    EMAIL_BACKEND = "django.core.mail.backends.dummy.EmailBackend"
elif env.str("EMAIL_URL", default=""):
    vars().update(env.email_url("EMAIL_URL"))
EMAIL_TIMEOUT = env.int("EMAIL_TIMEOUT", default=10)  # seconds: a hung mail server never holds a request

# Members' notifications, clients' receipts (docs/operations.md#notifications; EMAIL_URL=off: none written).
# After attempt n fails, wait schedule[n-1]; after the last the notification is failed (~1 day).
NOTIFICATION_RETRY_SCHEDULE_SECONDS = [10, 60, 300, 900, 3600, 3 * 3600, 6 * 3600, 12 * 3600]
NOTIFICATION_LEASE_SECONDS = 60  # one SMTP send, within EMAIL_TIMEOUT, holds its row this long
NOTIFICATION_POLL_SECONDS = env.float("NOTIFICATION_POLL_SECONDS", default=30)

# --- Security headers -----------------------------------------------------------------------------------
# Content-Security-Policy on every response (django-csp): only this origin's scripts, styles and images,
# no inline script or style, no framing, forms post only here. The QR code is inline SVG markup (no data:
# URL needed, but data: images are allowed for SVG icons in CSS). The API docs pages get their own,
# looser policy in payments/security.py.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}
# --- end Security headers -------------------------------------------------------------------------------

# --- API ------------------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["payments.api.authentication.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["payments.auth.IsMerchant"],  # and the view's required_scopes
    "DEFAULT_THROTTLE_CLASSES": ["payments.api.authentication.ApiTokenThrottle"],
    "DEFAULT_PARSER_CLASSES": ["core.api.parsers.DecimalJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["core.api.renderers.KassaJSONRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "core.api.renderers.AlwaysJSONNegotiation",
    "EXCEPTION_HANDLER": "core.errors.problem_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "core.api.pagination.KassaPagination",
    "PAGE_SIZE": 50,
    "UNAUTHENTICATED_USER": None,
}
# Bodies above this are refused with 413 before they are parsed.
API_MAX_BODY_BYTES = 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = API_MAX_BODY_BYTES
# --- API tokens (payments/tokens.py) ---
# Requests per API token per window (the company's own token: per company), e.g. 600/min; empty: no limit.
API_TOKEN_RATE = env.str("API_TOKEN_RATE", default="600/min")

from .openapi import SPECTACULAR_SETTINGS  # noqa: E402, F401  (the OpenAPI document: title, hooks, enum names)

# --- Kassa ----------------------------------------------------------------------------------------------
# Local receivers (127.0.0.1) are refused as webhook URLs unless this is on; `make run` turns it on.
WEBHOOK_ALLOW_PRIVATE_HOSTS = env.bool("WEBHOOK_ALLOW_PRIVATE_HOSTS", default=False)
# Plain http:// webhook URLs are refused (at save and again at send) unless this is on; development and the
# tests turn it on for local receivers.
WEBHOOK_ALLOW_HTTP = env.bool("WEBHOOK_ALLOW_HTTP", default=False)
# After a signing secret is rotated (or set), the previous one keeps signing beside it this long.
WEBHOOK_SECRET_OVERLAP_HOURS = env.int("WEBHOOK_SECRET_OVERLAP_HOURS", default=24)
# Per-code overrides of the asset registry, e.g. {"btc": {"min_withdrawal": "0.001"}} (core/assets.py).
ASSET_OVERRIDES = json_env(env, "ASSET_OVERRIDES")

# LOGGING (LOG_FORMAT, LOG_LEVEL): config/settings/operations.py, built by core/logs.py.

# --- Webhook delivery (docs/decisions.md) -----------------------------------------------------------------
WEBHOOK_CONNECT_TIMEOUT_SECONDS = 5
WEBHOOK_TOTAL_TIMEOUT_SECONDS = 10
# After attempt n fails, wait schedule[n-1] (±jitter); after the last, the event is failed (~3 days).
WEBHOOK_RETRY_SCHEDULE_SECONDS = [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]
WEBHOOK_RETRY_JITTER = 0.1
WEBHOOK_COUNTDOWN_MAX_SECONDS = 900
# A claimed delivery may take connect + total timeouts; past this lease the poller takes the event back.
WEBHOOK_LEASE_SECONDS = env.int("WEBHOOK_LEASE_SECONDS", default=60)
# An event the poller enqueued is reserved this long for that message; if the message is lost, the next
# poll after it takes the event again (a late duplicate message finds the lease gone and does nothing).
WEBHOOK_ENQUEUE_LEASE_SECONDS = env.int("WEBHOOK_ENQUEUE_LEASE_SECONDS", default=60)
WEBHOOK_POLL_SECONDS = env.float("WEBHOOK_POLL_SECONDS", default=10)
WEBHOOK_POLL_GRACE_SECONDS = env.float("WEBHOOK_POLL_GRACE_SECONDS", default=15)
WEBHOOK_POLL_BATCH = 200
_beat("webhook-poll-due", "webhooks.tasks.webhook_poll_due", WEBHOOK_POLL_SECONDS)

# --- Chains ---------------------------------------------------------------------------------------------
# Payment code -> backend ("sandbox" or a dotted path); every code not named runs on the sandbox chain.
CHAIN_BACKENDS = json_env(env, "CHAIN_BACKENDS")
# Family -> account-level extended public key, e.g. {"btc": "zpub...", "evm": "xpub..."}; a public
# development key (sandbox only!) is used for families without one. TON: one address plus a tag.
CHAIN_XPUBS = json_env(env, "CHAIN_XPUBS")
TON_DEPOSIT_ADDRESS = env.str("TON_DEPOSIT_ADDRESS", default="")
# Payment code -> its node, for the codes on a real backend (read and checked by its backend package), e.g.
# {"ltc": {"url": "http://user:pass@127.0.0.1:19443", "network": "regtest",
#          "deposit_wallet": "kassa-deposits", "payout_wallet": "kassa-payouts"}}
CHAIN_NODES = json_env(env, "CHAIN_NODES", parse_float=Decimal)
CHAIN_POLL_SECONDS = env.float("CHAIN_POLL_SECONDS", default=15)
# Where the EVM backend has its transactions signed: "unix:/run/kassa/signer.sock" (the signer process,
# `manage.py run_signer`), or "local" (in-process, the public development seed: development and tests only).
EVM_SIGNER = env.str("EVM_SIGNER", default="")
# Beat: sweeps of deposit addresses to the hot address (chains.evm.sweeps, chains.tron.sweeps,
# chains.near.sweeps), this often.
EVM_SWEEP_SECONDS = env.float("EVM_SWEEP_SECONDS", default=60)
_beat("evm-sweep", "chains.tasks.evm_sweep_all", EVM_SWEEP_SECONDS)
TRON_SWEEP_SECONDS = env.float("TRON_SWEEP_SECONDS", default=60)
_beat("tron-sweep", "chains.tasks.tron_sweep_all", TRON_SWEEP_SECONDS)
NEAR_SWEEP_SECONDS = env.float("NEAR_SWEEP_SECONDS", default=60)
_beat("near-sweep", "chains.tasks.near_sweep_all", NEAR_SWEEP_SECONDS)
# Beat mines a sandbox block this often; 0 turns it off (tests). `make run` sets it.
SANDBOX_BLOCK_SECONDS = env.float("SANDBOX_BLOCK_SECONDS", default=0)
_beat("chain-scan", "chains.tasks.chain_scan_all", CHAIN_POLL_SECONDS)
# The settled watch (chains.settled): credited deposits and confirmed payouts stay followed this many blocks
# after their own, per family (deeper than any confirmation count: a reorganisation past those must still be
# seen), and are re-checked this often as well as after every reorganisation a scan reports.
CHAIN_SETTLED_WATCH_BLOCKS = {"btc": 100, "ltc": 100, "bch": 100, "evm": 128}
CHAIN_SETTLED_WATCH_BLOCKS.update(json_env(env, "CHAIN_SETTLED_WATCH_BLOCKS"))
CHAIN_SETTLED_WATCH_SECONDS = env.float("CHAIN_SETTLED_WATCH_SECONDS", default=60)
_beat("chain-settled-watch", "chains.tasks.chain_settled_watch_all", CHAIN_SETTLED_WATCH_SECONDS)
if SANDBOX_BLOCK_SECONDS:
    _beat("sandbox-mine", "chains.tasks.sandbox_mine_block", SANDBOX_BLOCK_SECONDS)

# --- Invoices -------------------------------------------------------------------------------------------
# Service fee in percent of the converted total (a company's own fee_percent wins).
INVOICE_FEE_PERCENT = env.str("INVOICE_FEE_PERCENT", default="1")
INVOICE_EXPIRY_SWEEP_SECONDS = env.float("INVOICE_EXPIRY_SWEEP_SECONDS", default=30)
INVOICE_EXPIRY_BATCH = 1000
# Public endpoints (GET invoice, proceed), per client address, shared through the cache.
INVOICE_PUBLIC_RATE = env.str("INVOICE_PUBLIC_RATE", default="120/min")
NUM_PROXIES = env.int("NUM_PROXIES", default=0)  # proxies in front of gunicorn setting X-Forwarded-For
REST_FRAMEWORK["NUM_PROXIES"] = NUM_PROXIES
REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = {"invoice_public": INVOICE_PUBLIC_RATE}
_beat("invoice-expiry", "invoices.tasks.invoice_expire_due", INVOICE_EXPIRY_SWEEP_SECONDS)

# --- Rates (core/rates.py) --------------------------------------------------------------------------
# "static" (the table below, overlaid by RATES_FILE, which `manage.py update_rates` writes), "http" (a
# CoinGecko-style /simple/price API), or a dotted path to a RateProvider class.
RATES_PROVIDER = env.str("RATES_PROVIDER", default="static")
# USD per one unit, as strings (never floats). The RATES_STATIC_USD environment variable (JSON) overrides
# single entries; its numbers are read as text so none passes through a float.
RATES_STATIC_USD = {
    "eur": "1.08",
    "btc": "92000",
    "eth": "3100",
    "usdt": "1",
    "usdc": "1",
    "sol": "140",
    "ton": "5.4",
    "bnb": "610",
    "ltc": "85",
    "trx": "0.24",
    "bch": "420",
    "near": "4.8",
}
RATES_STATIC_USD.update(json_env(env, "RATES_STATIC_USD", parse_float=str))
RATES_FILE = Path(env.str("RATES_FILE", default=str(VAR_DIR / "rates.json")))
RATES_HTTP_URL = env.str("RATES_HTTP_URL", default="https://api.coingecko.com/api/v3").rstrip("/")
RATES_HTTP_API_KEY = env.str("RATES_HTTP_API_KEY", default="")  # sent as x-cg-demo-api-key when set
RATES_HTTP_CONNECT_TIMEOUT_SECONDS = 3
RATES_HTTP_TIMEOUT_SECONDS = 10
# One fetch serves every process (through the cache) this long; a symbol's last good price then covers
# API failures this much longer before rates become unavailable (503 rate_unavailable).
RATES_CACHE_SECONDS = env.int("RATES_CACHE_SECONDS", default=60)
RATES_STALE_SECONDS = env.int("RATES_STALE_SECONDS", default=3600)
# --- end Rates ------------------------------------------------------------------------------------------

# --- Withdrawals (withdrawals/) -------------------------------------------------------------------------
WITHDRAWAL_MAX_ITEMS = 1000  # items per POST /api/transactions/withdraw (docs/decisions.md)
# Compliance screen run before each broadcast (withdrawals/screening.py); the default refuses the
# addresses of WITHDRAWAL_DENY_ADDRESSES (comma-separated, case-insensitive) and allows everything else.
WITHDRAWAL_SCREEN = env.str("WITHDRAWAL_SCREEN", default="withdrawals.screening.DenyListScreen")
WITHDRAWAL_DENY_ADDRESSES = env.list("WITHDRAWAL_DENY_ADDRESSES", default=[])
# Beat: the payout monitor (withdrawals.payouts) re-sends, settles and plans every this many seconds.
WITHDRAWAL_POLL_SECONDS = env.float("WITHDRAWAL_POLL_SECONDS", default=15)
# A payout still unconfirmed this long after its broadcast is replaced with a higher fee (RBF) where the
# chain allows it (btc; ltc where the node relays replacements); otherwise it waits, never rebuilt.
PAYOUT_BUMP_AFTER_SECONDS = env.int("PAYOUT_BUMP_AFTER_SECONDS", default=3600)
WITHDRAWAL_POLL_BATCH = 1000
# Auto-withdrawal sweeps (docs/decisions.md): every this many seconds, and after each sandbox block.
AUTO_WITHDRAWAL_SWEEP_SECONDS = env.float("AUTO_WITHDRAWAL_SWEEP_SECONDS", default=30)
# Idempotency-Key: kept this long; a concurrent repeat waits this long for the first one's response; a
# claim without response older than the lease (its process died) is taken over.
IDEMPOTENCY_TTL_HOURS = 24
IDEMPOTENCY_WAIT_SECONDS = env.float("IDEMPOTENCY_WAIT_SECONDS", default=10)
IDEMPOTENCY_LEASE_SECONDS = env.int("IDEMPOTENCY_LEASE_SECONDS", default=60)
_beat("payout-monitor", "withdrawals.tasks.payout_monitor_all", WITHDRAWAL_POLL_SECONDS)
_beat("auto-withdrawal-sweep", "withdrawals.tasks.auto_withdrawal_sweep_due", AUTO_WITHDRAWAL_SWEEP_SECONDS)
_beat("idempotency-keys-purge", "withdrawals.tasks.idempotency_keys_purge", 3600)
_beat("notifications-poll", "notifications.tasks.notifications_poll", NOTIFICATION_POLL_SECONDS)
# --- end Withdrawals ------------------------------------------------------------------------------------

# --- Dashboard (payments/dashboard/) ----------------------------------------------------------------------
from .accounts import *  # noqa: E402, F403  (log-in, sign-up, mail budgets, admin, 2FA, step-up, idle log-out)
from .operations import *  # noqa: E402, F403  (metrics, alerts and their channels, logs, readiness)

# `{% load dashboard %}`: the dashboard's template filters (payments/dashboard is not an app of its own).
_template_options = TEMPLATES[0]["OPTIONS"]
assert isinstance(_template_options, dict)
_template_options.setdefault("libraries", {})["dashboard"] = "payments.dashboard.templatetags"
_template_options["context_processors"].append("payments.dashboard.context.dashboard")
# --- end Dashboard ----------------------------------------------------------------------------------------

# --- Pay page -------------------------------------------------------------------------------------------
PAY_PAGE_POLL_SECONDS = env.int("PAY_PAGE_POLL_SECONDS", default=3)  # live status polling of /<invoice_id>
# How long "paid" is shown before the redirect to the merchant's page.
PAY_PAGE_REDIRECT_SECONDS = env.int("PAY_PAGE_REDIRECT_SECONDS", default=5)

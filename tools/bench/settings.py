"""`make bench`: production-like (DEBUG off, no SSL redirect) plus the bare baseline endpoint.

Only these settings install the `bench` app (its table and `/bench/baseline`); test and production never do.
"""

from config.settings.base import *  # noqa: F403
from config.settings.base import (
    DATABASES,
    FIELD_ENCRYPTION_KEY,
    INSTALLED_APPS,
    LOG_LEVEL,
    REST_FRAMEWORK,
    SECRET_KEY,
    VAR_DIR,
    env,
)
from core.keys import development_key
from core.logs import logging_config

DEBUG = False
SECRET_KEY = SECRET_KEY or development_key(VAR_DIR / "secret_key", "django")
FIELD_ENCRYPTION_KEY = FIELD_ENCRYPTION_KEY or development_key(VAR_DIR / "field_encryption_key", "fernet")
SANDBOX_ENABLED = env.bool("SANDBOX_ENABLED", default=True)
ROOT_URLCONF = "tools.bench.urls"
INSTALLED_APPS = [*INSTALLED_APPS, "tools.bench"]

# Without DATABASE_URL the bench gets its own SQLite file, so a run never fills (or locks) the developer's
# var/kassa.sqlite3. Only NAME changes: the WAL/IMMEDIATE/timeout options from base apply as in `make run`.
if not env.str("DATABASE_URL", default=""):
    DATABASES["default"]["NAME"] = str(VAR_DIR / "bench.sqlite3")

# The webhook-url benchmark saves a loopback literal (http://127.0.0.1:9/hook): with this on, the SSRF guard
# parses it and stops there, so no DNS query leaves the machine and the resolver's latency is not measured.
WEBHOOK_ALLOW_PRIVATE_HOSTS = env.bool("WEBHOOK_ALLOW_PRIVATE_HOSTS", default=True)
WEBHOOK_ALLOW_HTTP = env.bool("WEBHOOK_ALLOW_HTTP", default=True)  # local receivers speak plain http

# As production: one proxy in front (production refuses 0, kassa.E009), so a client is the address the
# proxy names in X-Forwarded-For. wrk sends the public invoice GET as from thousands of clients, each with
# production's INVOICE_PUBLIC_RATE (endpoints.py), so the per-client budget is counted as production
# counts it.
NUM_PROXIES = env.int("NUM_PROXIES", default=1)
REST_FRAMEWORK["NUM_PROXIES"] = NUM_PROXIES
# The per-token budget stays on, counted as in production (core.budgets: at this size a Redis round trip
# per lease of 100 requests), out of reach.
API_TOKEN_RATE = env.str("API_TOKEN_RATE", default="1000000000/min")

# Logs as production does (config/settings/production.py): one JSON object per line at LOG_LEVEL (INFO), so
# every request pays its access line here too. gunicorn's stream goes to a file (tools/bench/server.py), as a
# service's goes to the journal, never to a terminal.
LOG_FORMAT = env.str("LOG_FORMAT", default="json")
LOGGING = logging_config(LOG_FORMAT, LOG_LEVEL)
# The EVM backend signs in-process with the public development seed (never in production).
EVM_SIGNER = env.str("EVM_SIGNER", default="local")

"""pytest: DATABASE_URL/REDIS_URL when given (CI: PostgreSQL + Redis), else SQLite and local memory."""

import os

from core.keys import development_key

from .base import *  # noqa: F403
from .base import DATABASES, FIELD_ENCRYPTION_KEY, SECRET_KEY, VAR_DIR

DEBUG = False
SECRET_KEY = SECRET_KEY or development_key(VAR_DIR / "secret_key", "django")
FIELD_ENCRYPTION_KEY = FIELD_ENCRYPTION_KEY or development_key(VAR_DIR / "field_encryption_key", "fernet")
SANDBOX_ENABLED = True
DEMO_MERCHANT_ALLOWED = True
ADMIN_ENABLED = True  # as in development; tests of the switch reload the URLs
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # speed; never in production
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WEBHOOK_ALLOW_PRIVATE_HOSTS = False
WEBHOOK_ALLOW_HTTP = True  # local test receivers; production refuses http:// (tests/test_hostile_input.py)
# Messages sent by code under test stay in this process; tests that need a real broker start real workers
# (tests/test_webhook_reliability.py) with the deployment's settings.
CELERY_BROKER_URL = "memory://"
CELERY_BROKER_TRANSPORT_OPTIONS = {}
CELERY_TASK_ALWAYS_EAGER = False
# The tests' broker and their local-memory cache are both this process's: coalesced wake-ups work here too.
WAKE_COALESCE = True
# Each wake-up at its commit, so a test sees it at once; core/tests/test_wakeup.py covers the coalescer.
WAKE_DEBOUNCE_SECONDS = 0
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file, not :memory:, so worker processes started by reliability tests see the same database.
    # Per process, so two test runs on one machine never share (and break) one file.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-kassa-{os.getpid()}.sqlite3")}
EMAIL_ENABLED = True  # whatever EMAIL_URL a developer has: tests that turn it off say so
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
WHITENOISE_USE_FINDERS = True  # serve app static files without collectstatic in tests
# Static rates from the settings table only: a developer's `update_rates` file must not change test prices.
RATES_FILE = VAR_DIR / "test-rates-never-written.json"
# The EVM backend signs in-process with the public development seed (never in production).
EVM_SIGNER = "local"
# No per-token budget unless a test turns it on (payments/tests/test_api_token_budget.py).
API_TOKEN_RATE = ""
# No alert channel unless a test sets one (alerts/tests): a developer's ALERT_* environment never mails.
ALERT_EMAILS = []
ALERT_WEBHOOK_URL = ""

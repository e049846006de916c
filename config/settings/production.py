"""Production: gunicorn behind a TLS-terminating proxy, PostgreSQL, Redis. The default settings module.

`manage.py`, `celery -A config` (worker and beat), wsgi and asgi all load this module unless
DJANGO_SETTINGS_MODULE names another. Nothing here falls back to a development key: every process refuses
to start (ImproperlyConfigured listing each problem) while a `kassa_deploy` check fails, e.g. a weak
SECRET_KEY, a missing or malformed FIELD_ENCRYPTION_KEY, or WEBHOOK_ALLOW_PRIVATE_HOSTS on
(payments/checks.py, chains/checks.py). `manage.py check --deploy` runs the same checks.
"""

from core.logs import logging_config

from .base import *  # noqa: F403
from .base import LOG_LEVEL, env

DEBUG = False
KASSA_STARTUP_CHECKS = True
DEMO_MERCHANT_ALLOWED = False
# The simulated chain offers nothing real: a sandbox-only deployment (a demo) opts in.
SANDBOX_ENABLED = env.bool("SANDBOX_ENABLED", default=False)

# Behind the TLS proxy: NUM_PROXIES must say how many proxies set X-Forwarded-For (0 is refused, kassa.E009).
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]  # the load balancer's probes speak plain http
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=60 * 60 * 24 * 365)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
if not SECURE_HSTS_PRELOAD:
    # Preloading binds the whole domain to HTTPS in browsers for good: the operator opts in, we don't.
    SILENCED_SYSTEM_CHECKS = ["security.W021"]
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_CONTENT_TYPE_NOSNIFF = True
# One JSON object per log line (core/logs.py); LOG_FORMAT=text for a person reading a terminal.
LOG_FORMAT = env.str("LOG_FORMAT", default="json")
LOGGING = logging_config(LOG_FORMAT, LOG_LEVEL)

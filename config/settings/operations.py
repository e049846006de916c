"""What an operator watches: Prometheus metrics, operator alerts and their channels, the log format and the
request id, readiness (docs/operations.md)."""

from __future__ import annotations

import environ

_env = environ.Env()

# --- Operator alerts and their channels (alerts/, docs/operations.md#alerts) ---------------------------
# An alert that opens (and, with ALERT_NOTIFY_RESOLVED, one that is resolved) is told once per channel:
# e-mail to ALERT_EMAILS (comma-separated) and a POST to ALERT_WEBHOOK_URL signed with ALERT_WEBHOOK_SECRET
# as merchant webhooks are. The webhook passes the SSRF guard unless ALERT_WEBHOOK_ALLOW_PRIVATE_HOSTS (the
# operator's own URL: an alert relay inside the network); plain http only with WEBHOOK_ALLOW_HTTP.
ALERT_EMAILS = [address.strip() for address in _env.list("ALERT_EMAILS", default=[]) if address.strip()]
ALERT_WEBHOOK_URL = _env.str("ALERT_WEBHOOK_URL", default="").strip()
ALERT_WEBHOOK_SECRET = _env.str("ALERT_WEBHOOK_SECRET", default="")
ALERT_WEBHOOK_ALLOW_PRIVATE_HOSTS = _env.bool("ALERT_WEBHOOK_ALLOW_PRIVATE_HOSTS", default=False)
ALERT_NOTIFY_RESOLVED = _env.bool("ALERT_NOTIFY_RESOLVED", default=True)
# After attempt n of a channel fails, wait schedule[n-1]; after the last, the notification is failed (~1 day).
ALERT_RETRY_SCHEDULE_SECONDS = [10, 60, 300, 900, 3600, 3 * 3600, 6 * 3600, 12 * 3600]
ALERT_LEASE_SECONDS = 60  # a send (SMTP or POST, each within its timeouts) holds its notification this long
# Beat: notifications whose message was lost, due for this long at least, are sent again.
ALERT_POLL_SECONDS = _env.float("ALERT_POLL_SECONDS", default=30)
ALERT_POLL_GRACE_SECONDS = 15
# Beat entries of this module: config/celery.py adds them to CELERY_BEAT_SCHEDULE (base imports this module,
# so it cannot reach base's dict). Alert tasks run on the default queue, `housekeeping`.
OPERATIONS_BEAT_SCHEDULE = {
    "alert-notifications-poll": {
        "task": "alerts.tasks.alert_notifications_poll",
        "schedule": ALERT_POLL_SECONDS,
    },
}
# --- end Operator alerts ----------------------------------------------------------------------------------

# --- Metrics (config/metrics/, docs/operations.md#operations-metrics) ---------------------------------------
# /metrics answers only a request carrying `Authorization: Bearer <METRICS_TOKEN>`; without a token it is a
# 404, except with DEBUG on to a loopback client (development). Multi-process counting is switched on by the
# PROMETHEUS_MULTIPROC_DIR environment variable (read by prometheus-client itself, not a setting).
METRICS_TOKEN = _env.str("METRICS_TOKEN", default="")
# A payout not sent or not confirmed this long after it could go (or blocked for a reason) counts as stuck.
METRICS_PAYOUT_STUCK_SECONDS = _env.int("METRICS_PAYOUT_STUCK_SECONDS", default=7200)
# --- end Metrics ------------------------------------------------------------------------------------------

# --- Logs, request id, readiness (core/logs.py, core/request_id.py, docs/operations.md#logs) ------------
# LOG_FORMAT: "json" (one object per line; production's default, production.py) or "text" (readable; the
# default of development and tests). Worker and beat use the same LOGGING (config/celery.py).
from core.logs import logging_config as _logging_config  # noqa: E402

LOG_FORMAT = _env.str("LOG_FORMAT", default="text")
LOG_LEVEL = _env.str("LOG_LEVEL", default="INFO")
LOGGING = _logging_config(LOG_FORMAT, LOG_LEVEL)
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# /readyz asks each real chain node for its tip at most once per this many seconds per process (a load
# balancer polling every second must not hammer the nodes), and waits this long for the answers.
READYZ_NODE_CACHE_SECONDS = _env.float("READYZ_NODE_CACHE_SECONDS", default=5)
READYZ_NODE_TIMEOUT_SECONDS = _env.float("READYZ_NODE_TIMEOUT_SECONDS", default=2)
# --- end Logs ----------------------------------------------------------------------------------------------

"""The dashboard's accounts: log-in and its failure counters, sign-up, account mail budgets, the Django
admin, two-factor authentication, step-up freshness and the idle log-out (docs/security.md)."""

from __future__ import annotations

import environ

_env = environ.Env()

LOGIN_REDIRECT_URL = "/dashboard/"
LOGOUT_REDIRECT_URL = "/dashboard/login/"
# Failed logins per (username, client IP), counted in the cache: this many within the window locks the pair.
DASHBOARD_LOGIN_FAILURE_LIMIT = _env.int("DASHBOARD_LOGIN_FAILURE_LIMIT", default=5)
DASHBOARD_LOGIN_FAILURE_WINDOW_SECONDS = _env.int("DASHBOARD_LOGIN_FAILURE_WINDOW_SECONDS", default=900)
DEFAULT_FROM_EMAIL = _env.str("DEFAULT_FROM_EMAIL", default="Kassa <no-reply@localhost>")
# Log-in failures per account and per address too; sign-up (off: 404); mail and request budgets per
# DASHBOARD_MAIL_WINDOW_SECONDS; the Django admin (docs/security.md, "Log-in, sign-up and password reset").
DASHBOARD_LOGIN_ACCOUNT_FAILURE_LIMIT = _env.int("DASHBOARD_LOGIN_ACCOUNT_FAILURE_LIMIT", default=20)
DASHBOARD_LOGIN_IP_FAILURE_LIMIT = _env.int("DASHBOARD_LOGIN_IP_FAILURE_LIMIT", default=30)
DASHBOARD_SIGNUP = _env.bool("DASHBOARD_SIGNUP", default=True)
DASHBOARD_SIGNUP_IP_LIMIT = _env.int("DASHBOARD_SIGNUP_IP_LIMIT", default=5)
DASHBOARD_PASSWORD_RESET_IP_LIMIT = _env.int("DASHBOARD_PASSWORD_RESET_IP_LIMIT", default=10)
DASHBOARD_MAIL_ADDRESS_LIMIT = _env.int("DASHBOARD_MAIL_ADDRESS_LIMIT", default=3)
DASHBOARD_MAIL_WINDOW_SECONDS = _env.int("DASHBOARD_MAIL_WINDOW_SECONDS", default=3600)
ADMIN_ENABLED = _env.bool("ADMIN_ENABLED", default=False)

# --- Account security (security/): 2FA for everyone, step-up freshness, idle logout (docs/security.md) ---
DASHBOARD_REQUIRE_2FA = _env.bool("DASHBOARD_REQUIRE_2FA", default=False)
DASHBOARD_STEP_UP_SECONDS = _env.int("DASHBOARD_STEP_UP_SECONDS", default=300)
DASHBOARD_IDLE_TIMEOUT_SECONDS = _env.int("DASHBOARD_IDLE_TIMEOUT_SECONDS", default=1800)

"""The Django admin at /admin/, only where ADMIN_ENABLED is on (off by default in production).

Its log-in is the dashboard's: the same failure counters (one budget for a guesser wherever they guess),
429 while locked, and the authenticator code of a user who has one (forms.accounts.AdminLoginForm).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, URLResolver, path

from accounts.dashboard.forms.accounts import AdminLoginForm


def admin_login(request: HttpRequest) -> HttpResponse:
    response = admin.site.login(request)
    form = (getattr(response, "context_data", None) or {}).get("form")
    if getattr(form, "is_throttled", False):
        response.status_code = 429
    return response


def admin_urls() -> list[URLPattern | URLResolver]:
    """The admin's URLs, or none: with ADMIN_ENABLED off /admin/ is a 404 like any unknown path."""
    if not settings.ADMIN_ENABLED:
        return []
    admin.site.login_form = AdminLoginForm
    admin.site.login_template = "admin/kassa_login.html"
    # Before admin.site.urls: its own "login/" (and every redirect to "admin:login") lands here.
    return [path("admin/login/", admin_login), path("admin/", admin.site.urls)]

"""The security pages of the merchant dashboard (mounted under /dashboard/ by config/urls.py)."""

from django.urls import URLPattern, path

from security.dashboard import audit_views, auth_views, views

urlpatterns: list[URLPattern] = [
    path("login/code/", auth_views.login_code, name="login_code"),
    path("confirm/", auth_views.step_up, name="step_up"),
    path("security/", views.overview, name="security"),
    path("security/2fa/", views.totp_enrol, name="totp_enrol"),
    path("security/2fa/disable/", views.totp_disable, name="totp_disable"),
    path("security/recovery-codes/", views.recovery_codes, name="recovery_codes"),
    path("security/recovery-codes/new/", views.recovery_codes_regenerate, name="recovery_codes_regenerate"),
    path("security/require-2fa/", views.require_2fa, name="require_2fa"),
    path("security/audit/", audit_views.audit_log, name="audit_log"),
    path("security/audit/export/", audit_views.audit_export, name="audit_export"),
]

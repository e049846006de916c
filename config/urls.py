from typing import Any

from django.urls import URLPattern, URLResolver, include, path, re_path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.dashboard import urls as account_pages
from accounts.dashboard.views.admin_login import admin_urls
from alerts.dashboard import urls as alert_pages
from chains.dashboard import urls as sandbox_pages
from config import views as service_views
from config.metrics import views as metrics_views
from core.api.renderers import KassaJSONRenderer
from core.errors import api_not_found
from invoices.dashboard import urls as invoice_pages
from notifications.dashboard import urls as notification_pages
from payments.dashboard import urls as money_pages
from payments.security import redoc_view, swagger_ui_view
from security.dashboard import urls as security_pages
from webhooks.dashboard import urls as webhook_pages
from withdrawals.dashboard import urls as withdrawal_pages


class SchemaNegotiation(DefaultContentNegotiation):
    """Accept decides (406 when nothing fits), except that an explicit `?format=` wins over it."""

    def select_renderer(self, request: Request, renderers: Any, format_suffix: str | None = None) -> Any:
        wanted = format_suffix or request.query_params.get(self.settings.URL_FORMAT_OVERRIDE)
        if wanted:
            renderer = self.filter_renderers(renderers, wanted)[0]  # 404 for an unknown format
            return renderer, renderer.media_type
        return super().select_renderer(request, renderers, format_suffix)


class SchemaApi(SpectacularAPIView):
    """The OpenAPI document: YAML by default, JSON with `?format=json` or `Accept: application/json`; its
    errors (a POST is 405) are problem+json like the API's, not YAML."""

    content_negotiation_class = SchemaNegotiation  # the API's own negotiation always answers JSON

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)
        if isinstance(response, Response) and response.status_code >= 400:
            response.accepted_renderer = KassaJSONRenderer()
            response.accepted_media_type = "application/json"
        return response


api_patterns: list[URLPattern | URLResolver] = [
    path("", include("payments.api.urls")),
    path("", include("accounts.api.urls")),  # the company's members (scope team)
    path("", include("chains.api.urls_deposits")),
    path("", include("chains.api.urls")),
    path("", include("webhooks.api.urls")),
    path("", include("invoices.api.urls")),
    path("", include("withdrawals.api.urls")),
    path("schema/", SchemaApi.as_view(), name="schema"),
    # The docs pages get their own Content-Security-Policy (payments/security.py).
    path("docs/", swagger_ui_view(url_name="schema"), name="api-docs"),
    path("redoc/", redoc_view(url_name="schema"), name="api-redoc"),
    # Unknown API paths answer problem+json, never an HTML page (under DEBUG too): any character, a newline
    # (%0A) included, which `.` alone does not match.
    re_path(r"^[\s\S]*$", api_not_found),
]

# The dashboard: each app's own pages, under one namespace.
dashboard_patterns: list[URLPattern | URLResolver] = [
    *account_pages.urlpatterns,
    *money_pages.urlpatterns,
    *invoice_pages.urlpatterns,
    *withdrawal_pages.urlpatterns,
    *webhook_pages.urlpatterns,
    *sandbox_pages.urlpatterns,
    *security_pages.urlpatterns,
    *alert_pages.urlpatterns,
    *notification_pages.urlpatterns,
]

urlpatterns = [
    path("healthz", service_views.healthz, name="healthz"),
    path("metrics", metrics_views.metrics, name="metrics"),  # Prometheus, behind METRICS_TOKEN
    path("readyz", service_views.readyz, name="readyz"),
    path("sandbox/tx/<str:txid>", service_views.sandbox_transaction, name="sandbox-tx"),
    path("api/", include(api_patterns)),
    *admin_urls(),  # /admin/ only with ADMIN_ENABLED, its log-in throttled (accounts/dashboard)
    path("dashboard/", include((dashboard_patterns, "dashboard"))),
    path("", include("invoices.urls")),  # the pay page at /<invoice_id>: last, it matches a bare UUID
]

handler404 = "config.views.page_not_found"
handler500 = "config.views.server_error"

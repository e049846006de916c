from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path, re_path
from drf_spectacular.views import SpectacularAPIView

from payments import views as core_views
from payments.errors import api_not_found
from payments.security import redoc_view, swagger_ui_view

api_patterns: list[URLPattern | URLResolver] = [
    path("", include("payments.api.urls")),
    path("", include("payments.api.urls_deposits")),
    path("", include("webhooks.api.urls")),
    path("", include("invoices.api.urls")),
    path("", include("withdrawals.api.urls")),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # The docs pages get their own Content-Security-Policy (payments/security.py).
    path("docs/", swagger_ui_view(url_name="schema"), name="api-docs"),
    path("redoc/", redoc_view(url_name="schema"), name="api-redoc"),
    re_path(r"^.*$", api_not_found),  # unknown API paths answer problem+json, never an HTML page
]

urlpatterns = [
    path("healthz", core_views.healthz, name="healthz"),
    path("sandbox/tx/<str:txid>", core_views.sandbox_transaction, name="sandbox-tx"),
    path("api/", include(api_patterns)),
    path("admin/", admin.site.urls),
    path("dashboard/", include("payments.dashboard.urls")),
    path("", include("invoices.urls")),  # the pay page at /<invoice_id>: last, it matches a bare UUID
]

handler404 = "payments.views.page_not_found"
handler500 = "payments.views.server_error"

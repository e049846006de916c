"""The invoice pages of the merchant dashboard (mounted under /dashboard/ by config/urls.py)."""

from django.urls import URLPattern, path

from invoices.dashboard import views

urlpatterns: list[URLPattern] = [
    path("", views.overview, name="overview"),
    path("invoices/", views.invoice_list, name="invoice_list"),
    path("invoices/new/", views.invoice_new, name="invoice_new"),
    path("invoices/<uuid:invoice_id>/", views.invoice_detail, name="invoice_detail"),
    path("invoices/<uuid:invoice_id>/accept/", views.invoice_accept_view, name="invoice_accept"),
    path("invoices/<uuid:invoice_id>/refund/", views.invoice_refund_view, name="invoice_refund"),
    path("settings/payments/", views.payment_settings, name="payment_settings"),
    path("settings/payments/underpayment/", views.underpayment_limits, name="underpayment_limits"),
]

from django.urls import path

from invoices.api import settings, views

urlpatterns = [
    path("company/underpayment-limits", settings.UnderpaymentLimitsApi.as_view(), name="underpayment-limits"),
    path(
        "company/settings/redirect-url", settings.CompanyRedirectUrlApi.as_view(), name="company-redirect-url"
    ),
    path("invoices/v1/regular", views.InvoiceCreateApi.as_view(), name="invoices"),
    path("invoices/v1/regular/<uuid:invoice_id>", views.InvoiceDetailApi.as_view(), name="invoice"),
    path(
        "invoices/v1/regular/<uuid:invoice_id>/proceed",
        views.InvoiceProceedApi.as_view(),
        name="invoice-proceed",
    ),
    path(
        "invoices/v1/regular/<uuid:invoice_id>/accept",
        views.InvoiceAcceptApi.as_view(),
        name="invoice-accept",
    ),
    path(
        "invoices/v1/regular/<uuid:invoice_id>/refund",
        views.InvoiceRefundApi.as_view(),
        name="invoice-refund",
    ),
    path(
        "sandbox/invoices/<uuid:invoice_id>/expire",
        views.SandboxInvoiceExpireApi.as_view(),
        name="sandbox-invoice-expire",
    ),
]

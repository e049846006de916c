from django.urls import path

from payments.api import balances, views

urlpatterns = [
    path("company/settings/webhook-url", views.CompanyWebhookUrlApi.as_view(), name="company-webhook-url"),
    path("company/balances", balances.CompanyBalanceListApi.as_view(), name="company-balances"),
]

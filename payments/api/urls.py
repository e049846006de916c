from django.urls import path

from payments.api import views

urlpatterns = [
    path("company/settings/webhook-url", views.CompanyWebhookUrlApi.as_view(), name="company-webhook-url"),
]

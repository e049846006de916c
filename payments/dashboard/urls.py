"""The merchant dashboard (issue 8), under /dashboard/."""

from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, path, reverse_lazy

from payments.dashboard.forms.accounts import MerchantPasswordResetForm
from payments.dashboard.views import accounts, deposits, invoices, money, webhooks, withdrawals
from payments.dashboard.views import settings as settings_views

app_name = "dashboard"

account_patterns: list[URLPattern | URLResolver] = [
    path("signup/", accounts.signup, name="signup"),
    path("welcome/", accounts.welcome, name="welcome"),
    path("login/", accounts.DashboardLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(next_page=reverse_lazy("dashboard:login")), name="logout"),
    path(
        "password-reset/",
        auth_views.PasswordResetView.as_view(
            form_class=MerchantPasswordResetForm,
            email_template_name="registration/password_reset_email.txt",
            subject_template_name="registration/password_reset_subject.txt",
            success_url=reverse_lazy("dashboard:password_reset_done"),
        ),
        name="password_reset",
    ),
    path("password-reset/sent/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path(
        "password-reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(
            success_url=reverse_lazy("dashboard:password_reset_complete")
        ),
        name="password_reset_confirm",
    ),
    path(
        "password-reset/complete/",
        auth_views.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
]

urlpatterns: list[URLPattern | URLResolver] = [
    *account_patterns,
    path("", money.overview, name="overview"),
    path("balances/", money.balances, name="balances"),
    path("balances/<str:code>/", money.ledger, name="ledger"),
    path("invoices/", invoices.invoice_list, name="invoice_list"),
    path("invoices/new/", invoices.invoice_new, name="invoice_new"),
    path("invoices/<uuid:invoice_id>/", invoices.invoice_detail, name="invoice_detail"),
    path("invoices/<uuid:invoice_id>/accept/", invoices.invoice_accept_view, name="invoice_accept"),
    path("invoices/<uuid:invoice_id>/refund/", invoices.invoice_refund_view, name="invoice_refund"),
    path("withdrawals/", withdrawals.withdrawal_list, name="withdrawal_list"),
    path("withdrawals/export.csv", withdrawals.withdrawal_export, name="withdrawal_export"),
    path("withdrawals/new/", withdrawals.withdrawal_new, name="withdrawal_new"),
    path("withdrawals/bulk/", withdrawals.withdrawal_bulk, name="withdrawal_bulk"),
    path("withdrawals/rules/", withdrawals.withdrawal_rules, name="withdrawal_rules"),
    path("withdrawals/<str:uid>/", withdrawals.withdrawal_detail, name="withdrawal_detail"),
    path("webhooks/", webhooks.event_list, name="event_list"),
    path("webhooks/<uuid:event_id>/", webhooks.event_detail, name="event_detail"),
    path("webhooks/<uuid:event_id>/redeliver/", webhooks.event_redeliver, name="event_redeliver"),
    path("addresses/", deposits.static_addresses, name="static_addresses"),
    path("sandbox/", deposits.sandbox, name="sandbox"),
    path("sandbox/deposit/", deposits.sandbox_deposit_view, name="sandbox_deposit"),
    path("sandbox/mine/", deposits.sandbox_mine_view, name="sandbox_mine"),
    path("settings/api/", settings_views.api_settings, name="api_settings"),
    path("settings/api/token/rotate/", settings_views.token_rotate, name="token_rotate"),
    path("settings/api/secret/reveal/", settings_views.secret_reveal, name="secret_reveal"),
    path("settings/api/secret/rotate/", settings_views.secret_rotate, name="secret_rotate"),
    path("settings/api/secret/", settings_views.secret_set, name="secret_set"),
    path("settings/api/webhook/", settings_views.webhook_url_set, name="webhook_url"),
    path("settings/api/webhook/test/", settings_views.webhook_test, name="webhook_test"),
    path("settings/payments/", settings_views.payment_settings, name="payment_settings"),
    path("settings/payments/underpayment/", settings_views.underpayment_limits, name="underpayment_limits"),
]

"""The dashboard shell: sign-up, login, password reset, balances and ledger, static addresses and API
settings. Each app adds its own pages under the same "dashboard" namespace (config/urls.py)."""

from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, path, reverse_lazy

from payments.dashboard.forms.accounts import MerchantPasswordResetForm
from payments.dashboard.views import accounts, deposits, money
from payments.dashboard.views import settings as settings_views

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
    path("balances/", money.balances, name="balances"),
    path("balances/<str:code>/", money.ledger, name="ledger"),
    path("addresses/", deposits.static_addresses, name="static_addresses"),
    path("settings/api/", settings_views.api_settings, name="api_settings"),
    path("settings/api/token/rotate/", settings_views.token_rotate, name="token_rotate"),
    path("settings/api/secret/reveal/", settings_views.secret_reveal, name="secret_reveal"),
    path("settings/api/secret/rotate/", settings_views.secret_rotate, name="secret_rotate"),
    path("settings/api/secret/", settings_views.secret_set, name="secret_set"),
    path("settings/api/webhook/", settings_views.webhook_url_set, name="webhook_url"),
    path("settings/api/webhook/test/", settings_views.webhook_test, name="webhook_test"),
]

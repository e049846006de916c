"""The merchant's own account in the dashboard: sign-up, log-in, password reset, and the API settings
(tokens, signing secret, webhook URL). Mounted in the "dashboard" namespace by config/urls.py."""

from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, path, reverse_lazy

from accounts.dashboard.views import accounts, registration
from accounts.dashboard.views import settings as settings_views
from accounts.dashboard.views import team as team_views
from accounts.dashboard.views import tokens as token_views

account_patterns: list[URLPattern | URLResolver] = [
    path("signup/", registration.signup, name="signup"),
    path("signup/sent/", registration.signup_sent, name="signup_sent"),
    path("signup/confirm/<str:token>/", registration.signup_confirm_view, name="signup_confirm"),
    path("welcome/", accounts.welcome, name="welcome"),
    path("login/", accounts.DashboardLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(next_page=reverse_lazy("dashboard:login")), name="logout"),
    path("password-reset/", registration.MerchantPasswordResetView.as_view(), name="password_reset"),
    path("password-reset/sent/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path(
        "password-reset/<uidb64>/<token>/",
        registration.MerchantPasswordResetConfirmView.as_view(),
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
    path("settings/api/", settings_views.api_settings, name="api_settings"),
    path("settings/api/token/rotate/", settings_views.token_rotate, name="token_rotate"),
    path("settings/api/tokens/", token_views.api_tokens, name="api_tokens"),
    path("settings/api/tokens/new/", token_views.api_token_new, name="api_token_new"),
    path(
        "settings/api/tokens/<int:token_id>/revoke/",
        token_views.api_token_revoke_view,
        name="api_token_revoke",
    ),
    path("settings/api/secret/reveal/", settings_views.secret_reveal, name="secret_reveal"),
    path("settings/api/secret/rotate/", settings_views.secret_rotate, name="secret_rotate"),
    path("settings/api/secret/", settings_views.secret_set, name="secret_set"),
    path("settings/api/webhook/", settings_views.webhook_url_set, name="webhook_url"),
    path("settings/api/webhook/test/", settings_views.webhook_test, name="webhook_test"),
    path("team/", team_views.team, name="team"),
    path("team/invite/", team_views.team_invite_view, name="team_invite"),
    path("team/members/<int:member_id>/role/", team_views.team_role, name="team_role"),
    path("team/members/<int:member_id>/remove/", team_views.team_remove_view, name="team_remove"),
    path(
        "team/invitations/<uuid:invitation_id>/revoke/",
        team_views.team_invite_revoke_view,
        name="team_invite_revoke",
    ),
    path("invite/<str:token>/", team_views.team_accept_view, name="team_accept"),  # public: the mailed link
]

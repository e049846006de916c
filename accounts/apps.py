from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """The merchant's own account: sign-up, log-in, API tokens, signing secret and webhook URL settings."""

    name = "accounts"
    verbose_name = "Merchant accounts"

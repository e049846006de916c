from django.apps import AppConfig


class WithdrawalsConfig(AppConfig):
    name = "withdrawals"

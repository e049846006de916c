from django.apps import AppConfig


class AlertsConfig(AppConfig):
    """Operator alerts: something a person must look at (a reorg of a credited deposit, a short wallet...)."""

    name = "alerts"

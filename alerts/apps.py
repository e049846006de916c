from django.apps import AppConfig

from alerts import checks  # noqa: F401 - registered before any app is ready, so start-up runs them too


class AlertsConfig(AppConfig):
    """Operator alerts: something a person must look at (a reorg of a credited deposit, a short wallet...)."""

    name = "alerts"

    def ready(self) -> None:
        from alerts import tasks  # noqa: F401 - registers the tasks the outbox enqueues by name
        from alerts.metrics import alert_gauges
        from core.metrics import register_scrape_part

        register_scrape_part("alerts", alert_gauges)

from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"

    def ready(self) -> None:
        from core.metrics import register_scrape_part
        from webhooks.metrics import outbox_gauges

        register_scrape_part("outbox", outbox_gauges)
        from webhooks import tasks  # noqa: F401 - registers the tasks the services enqueue (core.enqueue.TaskRef)

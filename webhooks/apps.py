from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"

    def ready(self) -> None:
        from webhooks import tasks  # noqa: F401 - registers the tasks the services enqueue by name

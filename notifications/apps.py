from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    """E-mail notifications of members (chosen per member) and receipts to clients (per company)."""

    name = "notifications"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        from notifications import tasks  # noqa: F401 - registers the tasks the outbox enqueues by name
        from notifications.events import notify_login, notify_token_created
        from payments.tokens import token_created_hooks

        if notify_token_created not in token_created_hooks:
            token_created_hooks.append(notify_token_created)
        user_logged_in.connect(notify_login, dispatch_uid="kassa-notify-login")

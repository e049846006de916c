from django.apps import AppConfig


class SecurityConfig(AppConfig):
    name = "security"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_out

        from security.receivers import audit_logout

        user_logged_out.connect(audit_logout, dispatch_uid="security.audit_logout")

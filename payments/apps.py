from django.apps import AppConfig


class PaymentsConfig(AppConfig):
    name = "payments"
    verbose_name = "Payments core"

    def ready(self) -> None:
        from payments import (
            checks,  # registers the deployment checks
            schema,  # noqa: F401 - registers the OpenAPI auth extension
            static_deposits,  # noqa: F401 - registers the static address deposit handler
        )

        checks.refuse_unsafe_start()  # production: refuse to start while a kassa_deploy check fails

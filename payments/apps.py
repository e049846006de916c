from django.apps import AppConfig


class PaymentsConfig(AppConfig):
    """Merchants, their tokens, the ledger and balances."""

    name = "payments"
    verbose_name = "Payments"

    def ready(self) -> None:
        from payments import (
            checks,  # noqa: F401 - registers the deployment checks
            schema,  # noqa: F401 - registers the OpenAPI auth extension
        )

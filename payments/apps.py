from django.apps import AppConfig


class PaymentsConfig(AppConfig):
    name = "payments"
    verbose_name = "Payments core"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from core.fields import register_sqlite_functions

        connection_created.connect(register_sqlite_functions, dispatch_uid="kassa-money-sum")

        from core.statements import cache_long_statements

        cache_long_statements()  # psycopg keeps the conversion of Kassa's long one-statement writes

        from chains import checks as chain_checks  # noqa: F401 - its checks must be registered to refuse
        from payments import (
            checks,  # registers the deployment checks
            schema,  # noqa: F401 - registers the OpenAPI auth extension
            static_deposits,  # noqa: F401 - registers the static address deposit handler
        )

        checks.refuse_unsafe_start()  # production: refuse to start while a kassa_deploy check fails

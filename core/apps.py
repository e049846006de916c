from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The ground floor. Listed last in INSTALLED_APPS: its `ready` runs after every app has registered its
    deployment checks, and refuses to start on an unsafe configuration (core.checks), or with a task
    reference or beat entry that no task matches (core.enqueue)."""

    name = "core"
    verbose_name = "Kassa core"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from core.checks import refuse_unsafe_start
        from core.enqueue import check_task_refs
        from core.fields import register_sqlite_functions
        from core.statements import cache_long_statements

        connection_created.connect(register_sqlite_functions, dispatch_uid="kassa-money-sum")
        cache_long_statements()  # psycopg keeps the conversion of Kassa's long one-statement writes
        refuse_unsafe_start()  # production: refuse to start while a kassa_deploy check fails
        check_task_refs()  # every task reference names a task that takes its arguments

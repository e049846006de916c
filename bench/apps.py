from django.apps import AppConfig


class BenchConfig(AppConfig):
    name = "bench"
    verbose_name = "Benchmarks"
    default_auto_field = "django.db.models.BigAutoField"

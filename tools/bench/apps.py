from django.apps import AppConfig


class BenchConfig(AppConfig):
    name = "tools.bench"
    label = "bench"  # the label its migrations and table (bench_baselinerow) were made under
    verbose_name = "Benchmarks"
    default_auto_field = "django.db.models.BigAutoField"

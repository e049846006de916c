"""Root URLconf of `tools.bench.settings`: the service's URLs plus the baseline, found nowhere else."""

from django.urls import path

from config.urls import handler404, handler500
from config.urls import urlpatterns as service_urlpatterns
from tools.bench.views import baseline, baseline_read

urlpatterns = [
    path("bench/baseline", baseline, name="bench-baseline"),
    path("bench/baseline/<int:row_id>", baseline_read, name="bench-baseline-read"),
    *service_urlpatterns,
]

__all__ = ["handler404", "handler500", "urlpatterns"]

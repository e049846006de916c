"""`GET /metrics`: the Prometheus text exposition of this host's processes and of the database gauges.

Guarded by a bearer token (`METRICS_TOKEN`, compared in constant time): a request without it, or with
another, is a 401. Without a token configured the page does not exist (404), except in development (DEBUG)
to a client on loopback.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector

from config.metrics.collector import DatabaseCollector
from core.metrics import MULTIPROC_DIR

LOOPBACK = frozenset({"127.0.0.1", "::1"})


class _Scrape:
    """What one scrape exposes: the counters (this process's, or every process's files added up) and the
    database gauges, read once here however many processes count."""

    def __init__(self) -> None:
        if MULTIPROC_DIR:
            self.counters = CollectorRegistry()
            MultiProcessCollector(self.counters, path=MULTIPROC_DIR)
        else:
            self.counters = REGISTRY

    def collect(self) -> Iterable[Metric]:
        yield from self.counters.collect()
        yield from DatabaseCollector().collect()


@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    token = settings.METRICS_TOKEN
    if not token:
        if settings.DEBUG and request.META.get("REMOTE_ADDR") in LOOPBACK:
            return _exposition()
        raise Http404
    scheme, _, given = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
        response = HttpResponse("A metrics token is required.\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return _exposition()


def _exposition() -> HttpResponse:
    response = HttpResponse(generate_latest(_Scrape()), content_type=CONTENT_TYPE_LATEST)  # type: ignore[arg-type]
    response["Cache-Control"] = "no-store"
    return response

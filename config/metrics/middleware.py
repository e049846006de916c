"""Counts every request and times it, by the URL pattern it matched: first in MIDDLEWARE, so redirects and
refusals of the middleware after it count too. No database, no network: a few dictionary look-ups and two
increments (in a file mapped into memory in multi-process mode)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponseBase

from core.metrics import HTTP_DURATION, HTTP_REQUESTS

logger = logging.getLogger(__name__)

# Anything else a client sends is "other": label values must stay a small fixed set, whatever arrives.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# Requests that matched no URL pattern (404s of any path, refusals before the URL was resolved).
UNMATCHED = "unmatched"


class MetricsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response
        # The labelled children, kept: `labels()` takes a lock and builds a key on every call. Bounded by the
        # URL patterns x METHODS x 5 status classes.
        self._counts: dict[tuple[str, str, int], Any] = {}
        self._durations: dict[str, Any] = {}

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        started = time.perf_counter()
        response = self.get_response(request)
        try:
            self._record(request, response.status_code, time.perf_counter() - started)
        except OSError:
            logger.warning("request metrics could not be recorded (PROMETHEUS_MULTIPROC_DIR?)", exc_info=True)
        return response

    def _record(self, request: HttpRequest, status: int, seconds: float) -> None:
        match = request.resolver_match
        route = (match.route or match.view_name or UNMATCHED) if match is not None else UNMATCHED
        method = request.method if request.method in METHODS else "other"
        status_class = min(max(status // 100, 1), 5)
        key = (route, method or "other", status_class)
        counter = self._counts.get(key)
        if counter is None:
            counter = self._counts[key] = HTTP_REQUESTS.labels(
                route=route, method=key[1], status=f"{status_class}xx"
            )
        duration = self._durations.get(route)
        if duration is None:
            duration = self._durations[route] = HTTP_DURATION.labels(route=route)
        counter.inc()
        duration.observe(seconds)

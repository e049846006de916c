"""A throttle that cannot reach the shared cache (Redis down) counts in the process's own memory with the same
limits: never a 500, a warning at most once a minute, and the metric kassa_throttle_local_counts_total."""

from __future__ import annotations

import logging
import uuid

import pytest
import redis
from django.core.cache import cache
from django.test import Client
from prometheus_client import REGISTRY
from rest_framework.settings import api_settings
from rest_framework.test import APIClient

from core import budgets, throttle
from invoices.api.views import PublicInvoiceThrottle
from payments.api import authentication
from tests.factories import PASSWORD, ApiTokenFactory
from tests.outages import redis_caches, redis_down_caches

pytestmark = pytest.mark.django_db

BALANCES = "/api/company/balances"
LOGIN = "/dashboard/login/"
WINDOW_START = 1_800_000_000  # a multiple of 60


@pytest.fixture
def fresh_counters(monkeypatch):  # type: ignore[no-untyped-def]
    throttle.local.clear()
    budgets.forget_leases()
    monkeypatch.setattr(
        throttle, "_state", {"down_until": float("-inf"), "warned_at": float("-inf"), "since_warning": 0}
    )
    monkeypatch.setattr(authentication, "_clock", lambda: WINDOW_START + 15.0)
    yield
    throttle.local.clear()
    budgets.forget_leases()


@pytest.fixture
def redis_down(settings, fresh_counters):  # type: ignore[no-untyped-def]
    """The shared cache is a Redis at a port nothing listens on."""
    settings.CACHES = redis_down_caches()


def local_counts(name: str) -> float:
    return REGISTRY.get_sample_value("kassa_throttle_local_counts_total", {"throttle": name}) or 0.0


def _warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "core.throttle" and r.levelno == logging.WARNING]


def _api(merchant) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient(raise_request_exception=False)
    secret = ApiTokenFactory(company=merchant.company, scopes=["balances:read"]).secret
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def test_the_api_budget_counts_in_the_process_when_redis_is_down(merchant, settings, redis_down, caplog):
    settings.API_TOKEN_RATE = "3/min"
    client = _api(merchant)
    before = local_counts("api_token")

    statuses = [client.get(BALANCES).status_code for _ in range(5)]

    assert statuses == [200, 200, 200, 429, 429]  # the same limit, never a 500
    assert local_counts("api_token") - before == 5
    (warning,) = _warnings(caplog)  # one, not one per request
    assert "ConnectionError" in warning.getMessage()


def test_the_public_invoice_budget_counts_in_the_process_when_redis_is_down(settings, redis_down):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"invoice_public": "2/min"},
    }
    api_settings.reload()
    original = PublicInvoiceThrottle.THROTTLE_RATES
    PublicInvoiceThrottle.THROTTLE_RATES = api_settings.DEFAULT_THROTTLE_RATES
    client = APIClient(raise_request_exception=False)
    try:
        statuses = [client.get(f"/api/invoices/v1/regular/{uuid.uuid4()}").status_code for _ in range(3)]
    finally:
        PublicInvoiceThrottle.THROTTLE_RATES = original

    assert statuses == [404, 404, 429]


def test_the_login_throttle_locks_when_redis_is_down(merchant, settings, redis_down):
    settings.DASHBOARD_LOGIN_FAILURE_LIMIT = 3
    client = Client(raise_request_exception=False, REMOTE_ADDR="198.51.100.7")
    email = merchant.company.owner.email
    before = local_counts("login")

    wrong = [client.post(LOGIN, {"username": email, "password": "wrong"}) for _ in range(3)]
    right = client.post(LOGIN, {"username": email, "password": PASSWORD})

    assert [r.status_code for r in wrong] == [200, 200, 200]  # the form again, with its error
    assert right.status_code == 429 and "_auth_user_id" not in client.session  # locked: not logged in
    assert b"Too many failed log-in attempts" in right.content
    assert local_counts("login") - before > 0


def test_the_warning_comes_again_after_its_interval(monkeypatch, caplog, redis_down):
    clock = {"now": 1000.0}
    monkeypatch.setattr(throttle.time, "monotonic", lambda: clock["now"])

    for _ in range(3):
        throttle.allow("test", "someone", 10, 60)
    clock["now"] += throttle.WARNING_SECONDS
    throttle.allow("test", "someone", 10, 60)

    first, second = _warnings(caplog)
    assert "1 local count(s)" in first.getMessage() and "3 local count(s)" in second.getMessage()


class FailingStore:
    """A shared cache that cannot be reached, counting how often it was asked."""

    def __init__(self) -> None:
        self.asked = 0

    def get(self, key: str) -> object:
        self.asked += 1
        raise redis.exceptions.TimeoutError("Timeout connecting to server")


def test_an_unreachable_redis_is_asked_again_only_after_the_retry_interval(monkeypatch, fresh_counters):
    clock = {"now": 1000.0}
    monkeypatch.setattr(throttle.time, "monotonic", lambda: clock["now"])
    store = FailingStore()

    answers = [throttle.shared("test", lambda s: s.get("k"), store=store) for _ in range(3)]  # type: ignore[arg-type]
    clock["now"] += throttle.RETRY_SECONDS
    throttle.shared("test", lambda s: s.get("k"), store=store)  # type: ignore[arg-type]

    assert answers == [None, None, None]  # from the process's own (empty) counters
    assert store.asked == 2  # not once per call: each try may wait out a connect timeout


@pytest.mark.redis
def test_with_redis_up_the_budget_is_shared_and_nothing_counts_locally(merchant, settings, fresh_counters):
    settings.CACHES = redis_caches(settings.REDIS_URL)
    settings.API_TOKEN_RATE = "3/min"
    client = _api(merchant)
    before = local_counts("api_token")

    statuses = [client.get(BALANCES).status_code for _ in range(4)]

    assert statuses == [200, 200, 200, 429]
    assert local_counts("api_token") == before
    assert throttle.local.get_many(list(throttle.local._cache)) == {}  # type: ignore[attr-defined]
    budgets.forget_leases()  # another process: its first lease is refused by the count in Redis
    assert client.get(BALANCES).status_code == 429
    cache.clear()

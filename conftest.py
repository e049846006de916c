"""Suite-wide rules: tests that need PostgreSQL or Redis skip with a reason on a bare machine, and
under CI (`KASSA_FAIL_ON_SKIP=1`, set by .ci/run) any skip fails the run."""

from __future__ import annotations

import os

import pytest
from django.conf import settings

from tests.hardhat_node import hardhat_available
from tests.nodes import LITECOIND
from tests.tronweb_vectors import tronweb_available


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    engine = settings.DATABASES["default"]["ENGINE"]
    for item in items:
        if "postgres" in item.keywords and "postgresql" not in engine:
            item.add_marker(pytest.mark.skip(reason="needs PostgreSQL: set DATABASE_URL=postgres://..."))
        if "redis" in item.keywords and not settings.REDIS_URL:
            item.add_marker(pytest.mark.skip(reason="needs Redis: set REDIS_URL=redis://..."))
        if "litecoind" in item.keywords and not LITECOIND.exists():
            item.add_marker(
                pytest.mark.skip(reason=f"needs Debian's litecoind at {LITECOIND} (apt install litecoind)")
            )
        if "hardhat" in item.keywords and not hardhat_available():
            item.add_marker(pytest.mark.skip(reason="needs hardhat: npm ci --prefix tests/hardhat"))
        if "tronweb" in item.keywords and not tronweb_available():
            item.add_marker(pytest.mark.skip(reason="needs TronWeb: npm ci --prefix tests/tronweb"))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter else 0
    if os.environ.get("KASSA_FAIL_ON_SKIP") == "1" and skipped:
        if reporter:
            reporter.write_line(f"KASSA_FAIL_ON_SKIP: {skipped} test(s) skipped; CI allows none.", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def _no_wakeup_waiting() -> None:
    """No wake-up flag of an earlier test (core.wakeup) says a message waits: its broker was that test's."""
    from core.wakeup import wake_flags_clear

    wake_flags_clear()


@pytest.fixture
def merchant(db):  # type: ignore[no-untyped-def]
    """A merchant made by the real service; `.public_token` and `.signing_secret` in clear."""
    from tests.factories import MerchantFactory

    return MerchantFactory(name="Acme Shop", email="owner@acme.test")


@pytest.fixture
def other_merchant(db):  # type: ignore[no-untyped-def]
    from tests.factories import MerchantFactory

    return MerchantFactory(name="Other Shop", email="owner@other.test")


@pytest.fixture
def api(merchant):  # type: ignore[no-untyped-def]
    """A DRF test client that sends the merchant's Bearer token."""
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {merchant.public_token}")
    return client


@pytest.fixture
def anon():  # type: ignore[no-untyped-def]
    from rest_framework.test import APIClient

    return APIClient()


@pytest.fixture
def receiver(merchant, settings):  # type: ignore[no-untyped-def]
    """A receiver on 127.0.0.1 holding the merchant's secret, set as the merchant's webhook URL."""
    from payments.services import company_set_webhook_url
    from webhooks.receiver import WebhookReceiver

    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    with WebhookReceiver(secret=merchant.signing_secret) as running:
        company_set_webhook_url(company_id=merchant.company.pk, url=running.url)
        merchant.company.refresh_from_db()
        yield running

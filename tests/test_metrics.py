"""`/metrics`: who may read it, and counters and gauges that move with what happens (docs/operations.md,
Operations: metrics)."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from alerts.services import alert_acknowledge, alert_raise
from chains.base import ChainUnavailable
from chains.models import ChainCursor, PayoutWallet
from chains.sandbox import SandboxBackend
from config.metrics import collector
from invoices.models import Invoice
from invoices.services import close_overdue_invoices
from tests.chain import mine, pay, send_payouts
from tests.factories import InvoiceFactory, WithdrawalFactory
from webhooks.delivery import webhook_deliver
from webhooks.models import WebhookEvent
from webhooks.receiver import Reply
from withdrawals.models import Withdrawal
from withdrawals.payouts import payout_monitor_all

pytestmark = pytest.mark.django_db
TOKEN = "metrics-token-for-tests-0123456789abcdef"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture(autouse=True)
def _token(settings):  # type: ignore[no-untyped-def]
    settings.METRICS_TOKEN = TOKEN


def scrape(client) -> Samples:  # type: ignore[no-untyped-def]
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


# --- who may read it --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "header",
    [
        None,
        "Bearer wrong",
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN[:-1]}",
        f"Basic {TOKEN}",
        TOKEN,
        "Bearer \u00e9\u00e9",
    ],
)
def test_a_missing_or_wrong_token_is_refused_with_401(client, header) -> None:  # type: ignore[no-untyped-def]
    extra = {} if header is None else {"HTTP_AUTHORIZATION": header}

    response = client.get("/metrics", **extra)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert b"kassa_" not in response.content


def test_the_token_is_a_bearer_token_in_any_case(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"bearer {TOKEN}")

    assert response.status_code == 200
    assert b"kassa_http_requests_total" in response.content
    assert response["Cache-Control"] == "no-store"


def test_without_a_token_configured_metrics_do_not_exist(client, settings) -> None:  # type: ignore[no-untyped-def]
    settings.METRICS_TOKEN = ""

    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer ")

    assert response.status_code == 404


@pytest.mark.parametrize(("address", "status"), [("127.0.0.1", 200), ("::1", 200), ("10.0.0.7", 404)])
def test_in_development_without_a_token_only_loopback_reads_them(client, settings, address, status) -> None:  # type: ignore[no-untyped-def]
    settings.METRICS_TOKEN = ""
    settings.DEBUG = True

    response = client.get("/metrics", REMOTE_ADDR=address)

    assert response.status_code == status


def test_only_get_and_head_are_answered(client) -> None:  # type: ignore[no-untyped-def]
    auth = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}

    assert client.post("/metrics", **auth).status_code == 405
    assert client.head("/metrics", **auth).status_code == 200


# --- HTTP requests ----------------------------------------------------------------------------------------


def test_requests_are_counted_by_url_pattern_never_by_raw_path(client, merchant) -> None:  # type: ignore[no-untyped-def]
    invoice = InvoiceFactory(company=merchant.company)
    before = scrape(client)

    client.get(f"/{invoice.pk}")
    client.get(f"/{invoice.pk}")
    client.get("/wp-login.php/../../etc/passwd")
    client.generic("BREW", "/healthz")
    after = scrape(client)

    assert (
        value(after, "kassa_http_requests_total", route="<uuid:invoice_id>", method="GET", status="2xx")
        - value(before, "kassa_http_requests_total", route="<uuid:invoice_id>", method="GET", status="2xx")
        == 2
    )
    assert (
        value(after, "kassa_http_requests_total", route="unmatched", method="GET", status="4xx")
        - value(before, "kassa_http_requests_total", route="unmatched", method="GET", status="4xx")
        == 1
    )
    assert (
        value(after, "kassa_http_requests_total", route="healthz", method="other", status="2xx")
        - value(before, "kassa_http_requests_total", route="healthz", method="other", status="2xx")
        == 1
    )
    labels = {dict(key[1]).get("route", "") for key in after}
    assert not any(str(invoice.pk) in label or "passwd" in label for label in labels)
    assert (
        value(after, "kassa_http_request_duration_seconds_count", route="<uuid:invoice_id>")
        - value(before, "kassa_http_request_duration_seconds_count", route="<uuid:invoice_id>")
        == 2
    )


# --- counters and gauges that move with invoices, deposits and webhooks ------------------------------------


def _delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def test_invoices_created_and_paid_move_the_counters_and_the_gauges(
    client, merchant, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    before = scrape(client)

    with django_capture_on_commit_callbacks(execute=True):
        InvoiceFactory(company=merchant.company)
        invoice = InvoiceFactory(company=merchant.company, code="btc")
    created = scrape(client)
    with django_capture_on_commit_callbacks(execute=True):
        pay(invoice, invoice.amount_due)
    seen = scrape(client)
    with django_capture_on_commit_callbacks(execute=True):
        mine(invoice, 6)
    paid = scrape(client)

    assert _delta(before, created, "kassa_invoices_created_total") == 2
    assert value(created, "kassa_invoices", status="created") == 1
    assert value(created, "kassa_invoices", status="pending") == 1
    assert Invoice.objects.get(pk=invoice.pk).status == "done"
    assert _delta(created, seen, "kassa_deposits_seen_total", code="btc") == 1
    assert value(seen, "kassa_invoices", status="processing") == 1
    assert value(seen, "kassa_invoices", status="pending") == 0
    assert _delta(seen, paid, "kassa_deposits_confirmed_total", code="btc") == 1
    assert _delta(seen, paid, "kassa_deposits_seen_total", code="btc") == 0  # seen once, however often mined
    assert value(paid, "kassa_invoices", status="processing") == 0


def test_every_status_an_invoice_enters_is_counted_the_final_ones_included(
    client, merchant, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    before = scrape(client)

    with django_capture_on_commit_callbacks(execute=True):
        InvoiceFactory(company=merchant.company)
        paid = InvoiceFactory(company=merchant.company, code="btc")
        overdue = [InvoiceFactory(company=merchant.company, code="btc") for _ in range(2)]
        pay(paid, paid.amount_due)
        mine(paid, 6)
    Invoice.objects.filter(pk__in=[i.pk for i in overdue]).update(
        expired_at=timezone.now() - timedelta(seconds=1)
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert close_overdue_invoices() == 2  # the sweep's set-based close is counted too
    after = scrape(client)

    assert _delta(before, after, "kassa_invoice_transitions_total", status="created") == 4
    assert _delta(before, after, "kassa_invoice_transitions_total", status="pending") == 3
    assert _delta(before, after, "kassa_invoice_transitions_total", status="processing") == 1
    assert _delta(before, after, "kassa_invoice_transitions_total", status="done") == 1
    assert _delta(before, after, "kassa_invoice_transitions_total", status="closed") == 2
    assert _delta(before, after, "kassa_invoice_transitions_total", status="wrong") == 0


def test_counts_of_a_rolled_back_transaction_are_not_counted(client, merchant) -> None:  # type: ignore[no-untyped-def]
    from django.db import transaction

    before = scrape(client)

    with pytest.raises(RuntimeError), transaction.atomic():
        InvoiceFactory(company=merchant.company)
        raise RuntimeError("rolled back")
    after = scrape(client)

    assert _delta(before, after, "kassa_invoices_created_total") == 0


def test_failing_webhooks_move_the_attempts_and_the_outbox(
    client, merchant, receiver, monkeypatch, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    receiver.default = Reply(status=500, body=b"down")
    InvoiceFactory(company=merchant.company)
    InvoiceFactory(company=merchant.company)
    before = scrape(client)

    with django_capture_on_commit_callbacks(execute=True):
        for event in WebhookEvent.objects.filter(status="pending"):
            webhook_deliver(event_id=event.pk)
    failing = scrape(client)
    now = timezone.now()
    WebhookEvent.objects.update(next_attempt_at=now - timedelta(seconds=90))
    monkeypatch.setattr(collector, "_now", lambda: now)
    overdue = scrape(client)

    assert len(receiver.received) == 2
    assert _delta(before, failing, "kassa_webhook_attempts_total", outcome="retry") == 2
    assert _delta(before, failing, "kassa_webhook_attempts_total", outcome="delivered") == 0
    assert value(before, "kassa_webhook_outbox_pending") == 2
    assert value(before, "kassa_webhook_outbox_due") == 2
    assert value(failing, "kassa_webhook_outbox_pending") == 2  # retried later: still waiting
    assert value(failing, "kassa_webhook_outbox_due") == 0
    assert value(failing, "kassa_webhook_outbox_oldest_due_age_seconds") == 0
    assert value(overdue, "kassa_webhook_outbox_oldest_due_age_seconds") == 90


def test_a_delivered_webhook_is_counted_as_delivered(
    client, merchant, receiver, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    InvoiceFactory(company=merchant.company)
    before = scrape(client)

    (event,) = WebhookEvent.objects.all()
    with django_capture_on_commit_callbacks(execute=True):
        webhook_deliver(event_id=event.pk)
    after = scrape(client)

    assert _delta(before, after, "kassa_webhook_attempts_total", outcome="delivered") == 1
    assert value(after, "kassa_webhook_outbox_pending") == 0


def test_payouts_pending_broadcast_and_stuck_per_code(client, merchant, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    first = WithdrawalFactory(company=merchant.company, asset="btc", amount=Decimal("0.002"))
    WithdrawalFactory(company=merchant.company, asset="btc", amount=Decimal("0.003"))
    queued = scrape(client)
    Withdrawal.objects.filter(pk=first.pk).update(blocked_reason="The payout wallet is short")
    alert_raise(kind="payout_wallet_short", key="btc", message="btc: short")
    blocked = scrape(client)
    Withdrawal.objects.update(blocked_reason="")
    send_payouts("btc")
    sent = scrape(client)
    later = timezone.now() + timedelta(hours=3)  # past METRICS_PAYOUT_STUCK_SECONDS (2 h)
    monkeypatch.setattr(collector, "_now", lambda: later)
    unconfirmed = scrape(client)

    assert value(queued, "kassa_payouts_pending", code="btc") == 2
    assert value(queued, "kassa_payouts_pending_amount", code="btc") == pytest.approx(0.005)
    assert value(queued, "kassa_payouts_stuck", code="btc") == 0
    assert value(blocked, "kassa_payouts_stuck", code="btc") == 1
    assert value(blocked, "kassa_payout_wallet_short", code="btc") == 1
    assert value(blocked, "kassa_alerts_open", kind="payout_wallet_short") == 1
    assert value(sent, "kassa_payouts_pending", code="btc") == 0
    assert value(sent, "kassa_payouts_broadcast", code="btc") == 2
    assert value(sent, "kassa_payouts_stuck", code="btc") == 0
    assert value(unconfirmed, "kassa_payouts_stuck", code="btc") == 2


def test_a_payout_waiting_for_approval_is_not_stuck(client, merchant, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    withdrawal = WithdrawalFactory(company=merchant.company, asset="btc")
    Withdrawal.objects.filter(pk=withdrawal.pk).update(approval_required=True)
    later = timezone.now() + timedelta(hours=3)
    monkeypatch.setattr(collector, "_now", lambda: later)

    waiting = scrape(client)
    Withdrawal.objects.filter(pk=withdrawal.pk).update(approved_at=later - timedelta(minutes=1))
    approved = scrape(client)

    assert value(waiting, "kassa_payouts_stuck", code="btc") == 0
    assert value(approved, "kassa_payouts_stuck", code="btc") == 0  # it could go a minute ago
    assert value(approved, "kassa_payouts_pending", code="btc") == 1


class FixedWallet(SandboxBackend):
    """The sandbox chain with a payout wallet of a set balance, or a node that cannot be asked."""

    balance: Decimal | None = Decimal("1.5")

    def spendable(self, code: str) -> Decimal:
        if self.balance is None:
            raise ChainUnavailable("node down")
        return self.balance


def test_the_hot_wallet_balance_is_what_the_payout_monitor_last_read(
    client, merchant, settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    settings.CHAIN_BACKENDS = {"btc": "tests.test_metrics.FixedWallet"}
    WithdrawalFactory(company=merchant.company, asset="btc", amount=Decimal("2"))
    payout_monitor_all()
    read_at = PayoutWallet.objects.get(code="btc").read_at
    monkeypatch.setattr(collector, "_now", lambda: read_at + timedelta(seconds=20))
    read = scrape(client)
    monkeypatch.setattr(FixedWallet, "balance", None)
    payout_monitor_all()  # the node is down: the last reading stays, and ages
    monkeypatch.setattr(collector, "_now", lambda: read_at + timedelta(seconds=80))
    down = scrape(client)

    assert value(read, "kassa_payout_wallet_balance", code="btc") == 1.5
    assert value(read, "kassa_payouts_pending_amount", code="btc") == 2  # balance < pending: the rule fires
    assert value(read, "kassa_payout_wallet_read_age_seconds", code="btc") == 20
    assert ("kassa_payout_wallet_balance", frozenset({("code", "eth")})) not in read  # sandbox: bottomless
    assert ("kassa_payout_wallet_gas", frozenset({("code", "btc")})) not in read  # not an account chain
    assert value(down, "kassa_payout_wallet_balance", code="btc") == 1.5
    assert value(down, "kassa_payout_wallet_read_age_seconds", code="btc") == 80
    assert list(PayoutWallet.objects.values_list("code", flat=True)) == ["btc"]
    settings.CHAIN_BACKENDS = {}  # btc back on the sandbox: its reading goes
    payout_monitor_all()
    assert not PayoutWallet.objects.exists()


def test_scan_lag_and_age_come_from_the_stored_cursor(client, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    now = timezone.now()
    monkeypatch.setattr(collector, "_now", lambda: now)
    ChainCursor.objects.update_or_create(
        code="eth",
        defaults={
            "cursor": {"height": 90, "blocks": []},
            "tip_height": 100,
            "scanned_at": now - timedelta(seconds=45),
        },
    )
    ChainCursor.objects.update_or_create(
        code="ltc",
        defaults={"cursor": {"hash": "00ab"}, "tip_height": 5000, "scanned_at": now, "paused_reason": "down"},
    )

    samples = scrape(client)

    assert value(samples, "kassa_chain_scan_lag_blocks", code="eth") == 10
    assert value(samples, "kassa_chain_tip_height", code="eth") == 100
    assert value(samples, "kassa_chain_scan_age_seconds", code="eth") == 45
    assert value(samples, "kassa_chain_paused", code="eth") == 0
    assert value(samples, "kassa_chain_scan_lag_blocks", code="ltc") == 0  # scans through the tip it reports
    assert value(samples, "kassa_chain_paused", code="ltc") == 1


def test_open_alerts_are_counted_by_kind(client) -> None:  # type: ignore[no-untyped-def]
    alert_raise(kind="node_down", key="btc", message="down")
    alert_raise(kind="node_down", key="ltc", message="down")
    alert_raise(kind="node_down", key="ltc", message="still down")  # the same open alert, counted again

    samples = scrape(client)

    assert value(samples, "kassa_alerts_open", kind="node_down") == 2


def test_an_acknowledged_alert_is_still_open(client) -> None:  # type: ignore[no-untyped-def]
    alert = alert_raise(kind="node_down", key="btc", message="down")
    alert_acknowledge(alert_id=alert.pk, by="ops")

    assert value(scrape(client), "kassa_alerts_open", kind="node_down") == 1


def test_a_part_that_cannot_be_read_is_marked_down_and_the_scrape_still_answers(client, settings) -> None:  # type: ignore[no-untyped-def]
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens there

    samples = scrape(client)

    assert value(samples, "kassa_metrics_part_up", part="queues") == 0
    assert value(samples, "kassa_metrics_part_up", part="invoices") == 1
    assert ("kassa_invoices", frozenset({("status", "created")})) in samples


@pytest.mark.redis
def test_celery_queue_lengths_are_read_from_redis(client, settings) -> None:  # type: ignore[no-untyped-def]
    import redis

    settings.CELERY_BROKER_URL = settings.REDIS_URL
    settings.CELERY_TASK_QUEUE_NAMES = ("kassa-metrics-test", "kassa-metrics-empty")
    broker = redis.Redis.from_url(settings.REDIS_URL)
    broker.delete("kassa-metrics-test", "kassa-metrics-test\x06\x169")
    broker.lpush("kassa-metrics-test", "a", "b")
    broker.lpush("kassa-metrics-test\x06\x169", "c")  # a message sent with a priority
    try:
        samples = scrape(client)
    finally:
        broker.delete("kassa-metrics-test", "kassa-metrics-test\x06\x169")

    assert value(samples, "kassa_celery_queue_length", queue="kassa-metrics-test") == 3
    assert value(samples, "kassa_celery_queue_length", queue="kassa-metrics-empty") == 0
    assert value(samples, "kassa_metrics_part_up", part="queues") == 1


# --- gunicorn ---------------------------------------------------------------------------------------------


def test_child_exit_marks_a_dead_worker_so_its_live_gauges_stop(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from config import gunicorn

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    (tmp_path / "gauge_livesum_4242.db").write_bytes(b"")
    (tmp_path / "gauge_livesum_4343.db").write_bytes(b"")
    (tmp_path / "counter_4242.db").write_bytes(b"")

    gunicorn.child_exit(None, type("Worker", (), {"pid": 4242})())

    assert sorted(path.name for path in tmp_path.iterdir()) == ["counter_4242.db", "gauge_livesum_4343.db"]


def test_every_metric_exposed_is_documented_and_every_documented_one_is_exposed(
    client, merchant, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.CHAIN_BACKENDS = {"btc": "tests.test_metrics.FixedWallet"}
    WithdrawalFactory(company=merchant.company, asset="btc", amount=Decimal("0.1"))
    payout_monitor_all()
    PayoutWallet.objects.create(code="eth", balance=Decimal(1), gas_tank=Decimal(1), read_at=timezone.now())
    ChainCursor.objects.create(code="btc", tip_height=10, scanned_at=timezone.now())
    alert_raise(kind="node_down", key="btc", message="btc: down")
    InvoiceFactory(company=merchant.company)
    client.get("/healthz")

    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    exposed = {
        family.name + ("_total" if family.type == "counter" else "")
        for family in text_string_to_metric_families(response.content.decode())
        if family.name.startswith("kassa_")  # not prometheus-client's own process_* and python_*
    }
    text = (Path(__file__).resolve().parent.parent / "docs" / "operations.md").read_text()
    section = text.split("## Operations: metrics", 1)[1].split("\n## ", 1)[0]
    tables = "\n".join(line for line in section.splitlines() if line.startswith("| `kassa_"))
    documented = set(re.findall(r"^\| `(kassa_[a-z_]+)`", tables, flags=re.MULTILINE))

    assert exposed - {"kassa_celery_queue_length"} == documented - {"kassa_celery_queue_length"}
    # Read from Redis only: tested with a Redis broker above; documented all the same.
    assert "kassa_celery_queue_length" in documented

"""Faults of the production stack, automated: the broker down after a commit, slow webhook receivers beside
payouts. (The database down is tests/test_unavailable.py; a drip-feeding receiver is in webhooks/tests.)"""

from __future__ import annotations

import signal
import time
from decimal import Decimal

import pytest
from django.conf import settings

from chains.models import ChainTx
from config.celery import app
from invoices.events import invoice_body
from invoices.models import Invoice
from payments.services import company_set_webhook_url
from tests.chain import fund
from tests.factories import MerchantFactory
from tests.workers import kill_tree, start_worker, wait_for
from webhooks.models import WebhookEvent
from webhooks.receiver import Reply, WebhookReceiver
from webhooks.services import webhook_publish
from withdrawals import payouts
from withdrawals.models import Withdrawal
from withdrawals.tests.conftest import ADDRESSES, client_for, run_broadcasts

UNREACHABLE_BROKER = "redis://127.0.0.1:1/0"  # a real Redis client, connection refused


@pytest.fixture
def broker_down():
    """Every publish of this process goes to a Redis that refuses connections (as when Redis is down)."""
    saved = app.conf.broker_url
    app.conf.broker_url = UNREACHABLE_BROKER
    app._pool = None
    app.__dict__.pop("amqp", None)
    yield
    app.conf.broker_url = saved
    app._pool = None
    app.__dict__.pop("amqp", None)


def _funded_merchant(name: str = "Down"):
    created = MerchantFactory(name=name, email=f"{name.lower()}@shop.test")
    fund(created.company, "btc", "1")
    return created


def _withdraw(created):
    return client_for(created).post(
        "/api/transactions/withdraw",
        {"items": [{"asset": "btc", "to": ADDRESSES["btc"], "amount": "0.01"}]},
        format="json",
    )


def test_every_task_is_routed_to_a_named_queue():
    app.loader.import_default_modules()
    names = [name for name in app.tasks if not name.startswith("celery.")]

    queues = {name: app.amqp.router.route({}, name)["queue"].name for name in names}

    assert set(queues.values()) <= set(settings.CELERY_TASK_QUEUE_NAMES)
    assert queues["webhooks.tasks.webhook_deliver"] == "webhooks"
    assert queues["webhooks.tasks.webhook_dispatch"] == "webhooks"
    assert queues["withdrawals.tasks.payout_plan"] == "payouts"
    assert queues["withdrawals.tasks.payout_broadcast"] == "payouts"
    assert queues["withdrawals.tasks.payout_monitor_all"] == "payouts"
    assert queues["chains.tasks.chain_scan_all"] == "chain"
    assert queues["invoices.tasks.invoice_expire_due"] == "housekeeping"
    # Nothing that pays out ever shares the webhooks queue.
    assert not [
        name for name, queue in queues.items() if name.startswith("withdrawals") and queue == "webhooks"
    ]


@pytest.mark.django_db(transaction=True)
def test_withdrawal_commits_and_answers_200_when_broker_is_down(broker_down, caplog):
    created = _funded_merchant()

    response = _withdraw(created)

    assert response.status_code == 200, response.content
    assert Withdrawal.objects.count() == 1
    assert any("failed after commit" in record.getMessage() for record in caplog.records)


@pytest.mark.django_db(transaction=True)
def test_invoice_create_answers_201_when_broker_is_down(broker_down):
    created = MerchantFactory(name="Down", email="down@shop.test")

    response = client_for(created).post(
        "/api/invoices/v1/regular",
        {"invoiceCurrency": "usd", "items": [{"name": "A", "price": "10"}]},
        format="json",
    )

    assert response.status_code == 201, response.content
    assert Invoice.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_withdrawal_created_while_broker_down_is_sent_once_by_the_monitor(broker_down, settings, caplog):
    created = _funded_merchant()
    response = _withdraw(created)
    uid = response.json()[0]["uid"]

    payouts.payout_monitor("btc")  # plans and stores it; the broadcast message cannot be sent either
    stored = Withdrawal.objects.get(uid=uid).txid
    app.conf.broker_url = settings.CELERY_BROKER_URL  # the broker is back
    app._pool = None
    app.__dict__.pop("amqp", None)
    payouts.payout_monitor("btc")  # sends the stored transaction
    payouts.payout_monitor("btc")  # and again: changes nothing
    run_broadcasts()

    withdrawal = Withdrawal.objects.get(uid=uid)
    assert stored == ""
    assert ChainTx.objects.get().txid == withdrawal.txid
    assert withdrawal.txid
    from payments.models import SandboxTransaction

    assert SandboxTransaction.objects.filter(kind="withdrawal", reference=withdrawal.reference).count() == 1
    assert created.company.accounts.get(code="btc").held == Decimal("0.01") + withdrawal.fee


HOLD_SECONDS = 6.0


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_payouts_are_not_delayed_by_slow_webhooks(tmp_path, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True  # the slow receiver listens on 127.0.0.1
    created = _funded_merchant("Busy")
    holds: list[float] = []
    fast = {
        "WEBHOOK_POLL_SECONDS": "1",
        "WEBHOOK_POLL_GRACE_SECONDS": "0",
        "WITHDRAWAL_POLL_SECONDS": "1",
    }
    # Every webhook request is held HOLD_SECONDS (under the delivery deadline): the receiver is slow.
    with WebhookReceiver(
        default=Reply(delay=HOLD_SECONDS), on_request=lambda got: holds.append(time.time())
    ) as hooks:
        company_set_webhook_url(company_id=created.company.pk, url=hooks.url)
        created.company.refresh_from_db()
        for index in range(10):
            webhook_publish(
                company=created.company,
                family="invoice",
                object_id=f"slow-{index}",
                body=invoice_body(invoice_id=f"slow-{index}", status="created"),
            )
        # The production layout: one worker for webhooks, one for the rest.
        webhook_worker = start_worker(tmp_path, "hooks", concurrency=1, queues="webhooks", **fast)
        payout_worker = start_worker(
            tmp_path, "work", concurrency=1, queues="payouts,chain,housekeeping", **fast
        )
        try:
            assert wait_for(lambda: len(holds) >= 1, 120), "no webhook was ever sent"
            response = _withdraw(created)
            uid = response.json()[0]["uid"]
            broadcast = wait_for(lambda: bool(Withdrawal.objects.get(uid=uid).txid), 120)
        finally:
            kill_tree(webhook_worker, signal.SIGKILL)
            kill_tree(payout_worker, signal.SIGKILL)

    from payments.models import SandboxTransaction

    assert broadcast, (tmp_path / "work").read_text(errors="replace")[-3000:]
    sent_at = SandboxTransaction.objects.get(
        kind="withdrawal", reference=Withdrawal.objects.get(uid=uid).reference
    )
    at = sent_at.created_at.timestamp()
    # The payout went out while a webhook request was being held by the slow receiver.
    assert any(start <= at < start + HOLD_SECONDS for start in holds), (at, holds)
    assert WebhookEvent.objects.filter(status="delivered").count() < 10

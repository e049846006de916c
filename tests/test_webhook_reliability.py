"""A worker killed with SIGKILL in the middle of deliveries loses no webhook (duplicates allowed)."""

import signal

import pytest

from invoices.events import invoice_body
from payments.services import company_set_webhook_url
from tests.factories import MerchantFactory
from tests.workers import kill_tree, start_worker, wait_for
from webhooks.models import WebhookEvent
from webhooks.receiver import Reply, WebhookReceiver
from webhooks.services import webhook_publish

EVENTS = 40
FAST = {
    # Short leases and a fast poller so recovery fits in a test; the mechanism is the production one.
    "WEBHOOK_LEASE_SECONDS": "4",
    "WEBHOOK_ENQUEUE_LEASE_SECONDS": "4",
    "WEBHOOK_POLL_SECONDS": "1",
    "WEBHOOK_POLL_GRACE_SECONDS": "0",
}


@pytest.mark.django_db(transaction=True)
def test_sigkilled_worker_then_restart_delivers_every_event(tmp_path, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True  # the receiver listens on 127.0.0.1
    created = MerchantFactory(name="Reliable", email="reliable@shop.test")
    with WebhookReceiver(secret=created.signing_secret, default=Reply(delay=0.3)) as receiver:
        company_set_webhook_url(company_id=created.company.pk, url=receiver.url)
        created.company.refresh_from_db()
        # Published here, their messages go to this process's in-memory broker and are never consumed:
        # every delivery below is found by the worker's poller, as after a broker loss.
        events = [
            webhook_publish(
                company=created.company,
                family="invoice",
                object_id=f"inv-{index}",
                body=invoice_body(invoice_id=f"inv-{index}", status="created"),
            )
            for index in range(EVENTS)
        ]
        first = start_worker(tmp_path, "first", **FAST)
        try:
            assert wait_for(lambda: len(receiver.received) >= 8, 120), "the first worker never delivered"
        finally:
            kill_tree(first, signal.SIGKILL)
        at_kill = len(receiver.received)
        undelivered_at_kill = WebhookEvent.objects.exclude(status="delivered").count()

        second = start_worker(tmp_path, "second", **FAST)
        try:
            all_delivered = wait_for(
                lambda: WebhookEvent.objects.filter(status="delivered").count() == EVENTS, 180
            )
        finally:
            kill_tree(second, signal.SIGTERM)

    log = (tmp_path / "second").read_text(errors="replace")[-3000:]
    assert first.returncode == -signal.SIGKILL
    assert undelivered_at_kill > 0, "the kill came too late to interrupt anything"
    assert at_kill < EVENTS
    assert all_delivered, log
    received_ids = {got.headers["webhook-id"] for got in receiver.received}
    assert received_ids == {str(event.pk) for event in events}
    assert all(got.verified for got in receiver.received)

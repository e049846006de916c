"""Webhook delivery pages: events with filters, one event with its attempts, redelivery."""

# ruff: noqa: F811 - the fixtures imported from test_dashboard_support are this module's test parameters

from __future__ import annotations

import pytest

from invoices.services import invoice_fill
from payments.models import Company
from tests.dashboard import (  # noqa: F401 - fixtures
    dash,
    dashboard_rates,
    text,
)
from tests.factories import InvoiceFactory
from webhooks.delivery import webhook_deliver
from webhooks.models import WebhookEvent
from webhooks.receiver import Reply

pytestmark = pytest.mark.django_db


def _events(company: Company) -> list[WebhookEvent]:
    return list(WebhookEvent.objects.filter(company=company).order_by("created_at"))


def test_the_events_list_filters_by_family_and_delivery_status(dash, merchant, receiver):
    invoice = InvoiceFactory(company=merchant.company)
    created = _events(merchant.company)[0]
    webhook_deliver(event_id=created.pk)
    invoice_fill(invoice_id=invoice.pk, client_email="client@example.com", payment_currency="btc")

    delivered = text(dash.get("/dashboard/webhooks/", {"status": "delivered"}))
    pending = text(dash.get("/dashboard/webhooks/", {"status": "pending", "family": "invoice"}))
    deposits = text(dash.get("/dashboard/webhooks/", {"family": "deposit"}))

    assert f"/dashboard/webhooks/{created.pk}/" in delivered and "invoice · pending" not in delivered
    assert "invoice · pending" in pending and f"/dashboard/webhooks/{created.pk}/" not in pending
    assert "No webhook events match these filters" in deposits


@pytest.mark.parametrize("params", [{"status": "bogus"}, {"family": "nope"}, {"page": "-1"}])
def test_bad_filters_never_fail(dash, merchant, params):
    InvoiceFactory(company=merchant.company)

    assert dash.get("/dashboard/webhooks/", params).status_code == 200


def test_the_event_page_shows_every_attempt_with_headers_body_and_answer(dash, merchant, receiver):
    InvoiceFactory(company=merchant.company)
    event = _events(merchant.company)[0]
    receiver.replies = [Reply(status=503, body=b"busy, try later")]
    webhook_deliver(event_id=event.pk)
    WebhookEvent.objects.filter(pk=event.pk).update(next_attempt_at=event.created_at)
    webhook_deliver(event_id=event.pk)

    html = text(dash.get(f"/dashboard/webhooks/{event.pk}/"))

    assert "#1 · HTTP 503" in html and "busy, try later" in html
    assert "#2 · HTTP 200" in html
    assert "webhook-signature" in html and "signature" in html
    assert "&quot;status&quot;: &quot;created&quot;" in html  # the body, pretty-printed
    assert receiver.received[-1].verified is True


def test_redelivery_sends_the_event_again_from_the_start(dash, merchant, receiver):
    InvoiceFactory(company=merchant.company)
    event = _events(merchant.company)[0]
    webhook_deliver(event_id=event.pk)

    response = dash.post(f"/dashboard/webhooks/{event.pk}/redeliver/", follow=True)

    assert "Redelivery queued" in text(response)
    event.refresh_from_db()
    assert event.status == WebhookEvent.Status.PENDING and event.attempt_count == 0
    webhook_deliver(event_id=event.pk)
    assert len(receiver.received) == 2
    assert receiver.received[0].headers["webhook-id"] == receiver.received[1].headers["webhook-id"]


def test_redelivery_without_a_url_explains_and_changes_nothing(dash, merchant):
    InvoiceFactory(company=merchant.company)
    event = _events(merchant.company)[0]
    assert event.status == WebhookEvent.Status.SKIPPED

    response = dash.post(f"/dashboard/webhooks/{event.pk}/redeliver/", follow=True)

    assert "Set a webhook URL before redelivering events." in text(response)
    event.refresh_from_db()
    assert event.status == WebhookEvent.Status.SKIPPED


def test_an_unknown_event_is_404(dash):
    missing = "00000000-0000-4000-8000-000000000000"

    assert dash.get(f"/dashboard/webhooks/{missing}/").status_code == 404
    assert dash.post(f"/dashboard/webhooks/{missing}/redeliver/").status_code == 404

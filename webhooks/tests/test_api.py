import pytest

from invoices.events import invoice_body
from payments.services import company_set_webhook_url
from webhooks.delivery import webhook_deliver
from webhooks.services import webhook_publish
from withdrawals.events import withdrawal_body

pytestmark = pytest.mark.django_db


def _invoice_event(company, invoice_id="inv-1", status="created"):
    return webhook_publish(
        company=company,
        family="invoice",
        object_id=invoice_id,
        body=invoice_body(invoice_id=invoice_id, status=status),
    )


def _withdrawal_event(company):
    from decimal import Decimal

    body = withdrawal_body(
        status="processing",
        asset="btc",
        dchain="btc",
        amount=Decimal("0.5"),
        fee=Decimal("0.0001"),
        to="bc1q",
        tx_hash="",
        uid="001-1",
    )
    return webhook_publish(company=company, family="withdrawal", object_id="001-1", body=body)


def test_list_is_paginated_newest_first_with_payload_as_sent(api, merchant, receiver):
    first = _invoice_event(merchant.company, "a")
    second = _withdrawal_event(merchant.company)
    webhook_deliver(event_id=first.pk)

    response = api.get("/api/webhooks/events?limit=1")

    body = response.json()
    assert response.status_code == 200
    assert body["count"] == 2
    assert body["next"].endswith("limit=1&offset=1")
    (item,) = body["results"]
    assert item["id"] == str(second.pk)
    assert item["family"] == "withdrawal"
    assert item["status"] == "pending"
    assert item["payload"]["amount"] == 0.5
    assert b'"amount":0.5' in response.content  # a number, as in the webhook itself
    assert item["createdAt"].endswith("Z") and len(item["createdAt"]) == 24


@pytest.mark.parametrize(
    ("query", "expected"),
    [("status=delivered", 1), ("status=pending", 1), ("family=invoice", 1), ("family=deposit", 0)],
)
def test_list_filters(api, merchant, receiver, query, expected):
    delivered = _invoice_event(merchant.company, "a")
    webhook_deliver(event_id=delivered.pk)
    _withdrawal_event(merchant.company)

    response = api.get(f"/api/webhooks/events?{query}")

    assert response.json()["count"] == expected


@pytest.mark.parametrize("query", ["status=sent", "family=payments"])
def test_unknown_filter_values_are_400(api, query):
    response = api.get(f"/api/webhooks/events?{query}")

    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"


def test_list_is_one_query_per_page_whatever_the_count(api, merchant, django_assert_max_num_queries):
    for index in range(30):
        _invoice_event(merchant.company, f"inv-{index}")

    with django_assert_max_num_queries(4):  # auth, count, page
        response = api.get("/api/webhooks/events")

    assert response.json()["count"] == 30


def test_detail_has_the_body_and_every_attempt(api, merchant, receiver):
    from webhooks.receiver import Reply

    receiver.replies = [Reply(status=500, body=b"try later")]
    event = _invoice_event(merchant.company)
    webhook_deliver(event_id=event.pk)

    response = api.get(f"/api/webhooks/events/{event.pk}")

    body = response.json()
    assert body["body"] == '{"invoiceId":"inv-1","status":"created","message":"Invoice created"}'
    (attempt,) = body["attemptLog"]
    assert attempt["statusCode"] == 500
    assert attempt["response"] == "try later"
    assert attempt["succeeded"] is False
    assert attempt["requestHeaders"]["webhook-id"] == str(event.pk)


def test_redeliver_returns_202_and_schedules_now(api, merchant, receiver):
    event = _invoice_event(merchant.company)
    webhook_deliver(event_id=event.pk)

    response = api.post(f"/api/webhooks/events/{event.pk}/redeliver")

    assert response.status_code == 202
    assert response.json()["status"] == "pending"
    assert webhook_deliver(event_id=event.pk).succeeded
    assert len(receiver.received) == 2


def test_redeliver_without_a_webhook_url_is_409(api, merchant):
    event = _invoice_event(merchant.company)

    response = api.post(f"/api/webhooks/events/{event.pk}/redeliver")

    assert response.status_code == 409
    assert response.json()["code"] == "invalid_state"


def test_another_merchants_event_is_404(api, merchant, other_merchant):
    company_set_webhook_url(company_id=other_merchant.company.pk, url="https://93.184.215.14/h")
    other_merchant.company.refresh_from_db()
    theirs = _invoice_event(other_merchant.company)

    detail = api.get(f"/api/webhooks/events/{theirs.pk}")
    redeliver = api.post(f"/api/webhooks/events/{theirs.pk}/redeliver")
    listing = api.get("/api/webhooks/events")

    assert detail.status_code == 404
    assert redeliver.status_code == 404
    assert listing.json()["count"] == 0


def test_unknown_event_id_is_404(api):
    response = api.get("/api/webhooks/events/not-a-uuid")

    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"


def test_events_need_auth(anon):
    assert anon.get("/api/webhooks/events").status_code == 401

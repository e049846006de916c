"""A signed test POST to the merchant's webhook URL, answered on the spot (the dashboard's "send test event").

A test is not a real event: it is not written to the outbox, never retried and never listed among the
deliveries. It goes through the delivery client itself (`webhooks.delivery.webhook_post`), so a passing
test means real events get through.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.utils import timezone

from core import jsonutil
from core.errors import InvalidState
from core.wire import iso_utc
from payments.models import Company
from payments.services import company_previous_signing_secret, company_signing_secret
from webhooks.delivery import delivery_headers, webhook_post


@dataclass(frozen=True)
class TestDelivery:
    url: str
    body: str
    status_code: int | None
    excerpt: str
    duration_ms: int
    error: str

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300 and not self.error


def webhook_send_test(*, company: Company) -> TestDelivery:
    """POST a signed test event to the current webhook URL now and report the receiver's answer."""
    company.refresh_from_db(fields=["webhook_url", "signing_secret_encrypted"])
    url = company.webhook_url
    if not url:
        raise InvalidState("Set a webhook URL before sending a test event.")
    webhook_id = str(uuid.uuid4())
    body = jsonutil.dumps(
        {
            "type": "test",
            "message": "Test event from the Kassa dashboard",
            "id": webhook_id,
            "createdAt": iso_utc(timezone.now()),
        }
    )
    headers = delivery_headers(
        company_signing_secret(company),
        webhook_id,
        body.encode(),
        previous=company_previous_signing_secret(company),
    )
    result = webhook_post(url, body.encode(), headers)
    return TestDelivery(
        url=url,
        body=body,
        status_code=result.status_code,
        excerpt=result.excerpt,
        duration_ms=result.duration_ms,
        error=result.error,
    )

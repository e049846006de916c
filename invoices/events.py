"""The body of an invoice's webhook (docs/api.md: invoiceId, status, message), built from the invoice's own
status enum; `webhooks` stores, signs and delivers it."""

from __future__ import annotations

from typing import Any

from core.wire import mark_sandbox
from invoices.models import InvoiceStatus

INVOICE_MESSAGES: dict[str, str] = {
    InvoiceStatus.CREATED: "Invoice created",
    InvoiceStatus.PENDING: "Waiting for the client's payment",
    InvoiceStatus.PROCESSING: "Payment received, waiting for confirmation",
    InvoiceStatus.DONE: "Invoice paid",
    InvoiceStatus.WRONG: "Payment lower than the invoice amount",
    InvoiceStatus.REFUNDED: "Invoice refunded",
    InvoiceStatus.CLOSED: "Invoice closed",
}
# Every invoice status has its message: a new status without one fails here, at import, not in a webhook.
assert set(INVOICE_MESSAGES) == set(InvoiceStatus.values), "an invoice status without a webhook message"


def invoice_body(*, invoice_id: str, status: str, sandbox: bool = False) -> dict[str, Any]:
    """docs/api.md: invoiceId, status, message."""
    body = {"invoiceId": invoice_id, "status": status, "message": INVOICE_MESSAGES[status]}
    return mark_sandbox(body, sandbox)

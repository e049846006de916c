"""The expiry sweep's set-based step on PostgreSQL: a batch of overdue invoices closed, with their webhook
events, by one statement (`invoices.services.close_overdue_invoices` runs it, then the per-invoice batches
for what is left: invoices with a confirmed part, which are credited on closing, and every overdue invoice
on other databases)."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core import jsonutil, metrics
from core.offer import sandbox_codes
from invoices.events import invoice_body
from invoices.models import Invoice
from invoices.rules import overdue_conditions, overdue_filter
from webhooks.models import WebhookEvent
from webhooks.services import webhook_publish_changed


class Closing(Protocol):
    """The close transition of `invoices.services.TRANSITIONS` (its table guards this step too)."""

    @property
    def sources(self) -> frozenset[str]: ...

    @property
    def target(self) -> str: ...


# The body of an invoice's webhook with a placeholder for its id, cut into the text before and after it.
_ID_MARK = "{invoice_id}"


def _body_around_id(status: str, *, sandbox: bool) -> list[str]:
    before, after = jsonutil.dumps(invoice_body(invoice_id=_ID_MARK, status=status, sandbox=sandbox)).split(
        _ID_MARK
    )
    return [before, after]


@transaction.atomic
def close_unpaid_batch(*, overdue: Q, batch: int, close: Closing) -> int:
    """PostgreSQL: close up to `batch` invoices matching `overdue` (one of `overdue_conditions`) with nothing
    confirmed (nothing to credit), with their webhook events, in one statement. The set-based
    `invoice_close`: same table guard, same event body (`invoice_body`, cut around the id); rows locked by a
    concurrent transition are skipped, not waited for."""
    now = timezone.now()
    due = (
        Invoice.objects.filter(overdue, status__in=close.sources, paid_amount=0)
        .order_by("expired_at")  # the index's order: a batch reads its rows and stops
        .select_for_update(skip_locked=True)
        .values_list("pk")[:batch]
    )
    due_sql, due_params = due.query.sql_with_params()
    table = Invoice._meta.db_table
    changed = f"""
        UPDATE {table} AS invoice SET status = %s, updated_at = %s
        WHERE invoice.id IN ({due_sql}) AND invoice.status = ANY(%s)
        RETURNING invoice.company_id, invoice.id::text AS object_id, invoice.status AS event_status,
            CASE WHEN invoice.payment_code = ANY(%s) THEN %s || invoice.id::text || %s
                 ELSE %s || invoice.id::text || %s END AS body
    """  # noqa: S608 - the table name from the model, the subquery from the ORM; values are parameters
    params = [
        close.target,
        now,
        *due_params,
        list(close.sources),
        sandbox_codes(),
        *_body_around_id(close.target, sandbox=True),
        *_body_around_id(close.target, sandbox=False),
    ]
    closed = webhook_publish_changed(changed, params, family=WebhookEvent.Family.INVOICE)
    metrics.invoice_status(close.target, closed)
    return closed


def overdue_invoice_ids(*, limit: int) -> list[UUID]:
    """Invoices the expiry rule closes now, oldest expiredAt first."""
    query = Invoice.objects.filter(overdue_filter(timezone.now())).order_by("expired_at", "pk")
    return list(query.values_list("pk", flat=True)[:limit])


def close_unpaid(*, batch: int, close: Closing) -> int:
    """Every overdue invoice with nothing confirmed, a batch per statement, one overdue condition (an index
    range) after the other. Returns how many were closed."""
    closed = 0
    for condition in overdue_conditions(timezone.now()):
        while (done_now := close_unpaid_batch(overdue=condition, batch=batch, close=close)) > 0:
            closed += done_now
            if done_now < batch:
                break
    return closed

from __future__ import annotations

import contextlib
import uuid
from uuid import UUID

from django.db.models import Count, Prefetch, Q, QuerySet

from invoices.models import Invoice, InvoiceItem
from payments.errors import NotFound
from payments.models import Company, Deposit
from webhooks.models import WebhookEvent
from webhooks.selectors import webhook_list_events


def _with_details(invoices: QuerySet[Invoice]) -> QuerySet[Invoice]:
    return invoices.select_related("company", "deposit_address").prefetch_related(
        "items",
        Prefetch(
            "deposit_address__deposits",
            queryset=Deposit.objects.order_by("seen_at", "pk"),
            to_attr="transactions",
        ),
    )


def _one_with_details(invoices: QuerySet[Invoice]) -> Invoice:
    """The one invoice of `invoices` with what `_with_details` gives a list (company, address, items, the
    address's deposits), read in three plain queries: by primary key, no ORDER BY, and without the prefetch
    machinery, whose work per query costs more than the queries on this, the busiest read."""
    invoice = next(iter(invoices.order_by().select_related("company", "deposit_address")), None)
    if invoice is None:
        raise NotFound("No such invoice.")
    items = list(InvoiceItem.objects.filter(invoice_id=invoice.pk).order_by("position"))
    invoice._prefetched_objects_cache = {"items": items}  # type: ignore[attr-defined]
    if invoice.deposit_address is not None:
        deposits = Deposit.objects.filter(deposit_address_id=invoice.deposit_address.pk).order_by(
            "seen_at", "pk"
        )
        invoice.deposit_address.transactions = list(deposits)  # type: ignore[attr-defined]
    return invoice


def invoice_get_public(*, invoice_id: UUID | str) -> Invoice:
    return _one_with_details(Invoice.objects.filter(pk=invoice_id))


def invoice_get_for_company(*, company: Company, invoice_id: UUID | str) -> Invoice:
    return _one_with_details(Invoice.objects.filter(pk=invoice_id, company=company))


def invoice_list_for_company(*, company: Company, status: str | None = None) -> QuerySet[Invoice]:
    invoices = Invoice.objects.filter(company=company)
    if status:
        invoices = invoices.filter(status=status)
    return _with_details(invoices).order_by("-created_at", "-pk")


def invoice_search_for_company(
    *, company: Company, status: str | None = None, query: str = ""
) -> QuerySet[Invoice]:
    """invoice_list_for_company narrowed by a search: an invoice id (whole) or part of the client e-mail."""
    invoices = invoice_list_for_company(company=company, status=status or None)
    query = query.strip()
    if not query:
        return invoices
    condition = Q(client_email__icontains=query)
    with contextlib.suppress(ValueError):  # not an id: the e-mail part alone
        condition |= Q(pk=uuid.UUID(query))
    return invoices.filter(condition)


def invoice_status_counts(*, company: Company) -> dict[str, int]:
    """How many of the company's invoices are in each status (one grouped query)."""
    rows = Invoice.objects.filter(company=company).order_by().values_list("status").annotate(n=Count("pk"))
    return {status: count for status, count in rows}


def invoice_events_for_company(*, company: Company, invoice_id: UUID | str) -> QuerySet[WebhookEvent]:
    """The invoice's webhook events, oldest first: its status timeline."""
    return (
        webhook_list_events(company=company, family=WebhookEvent.Family.INVOICE)
        .filter(object_id=str(invoice_id))
        .order_by("created_at", "pk")
    )


def invoice_deposits(invoice: Invoice) -> list[Deposit]:
    """The transfers to the invoice's address, oldest first (prefetched by the selectors above)."""
    if invoice.deposit_address is None:
        return []
    return list(getattr(invoice.deposit_address, "transactions", None) or [])

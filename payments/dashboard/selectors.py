"""Reads the dashboard needs beyond the apps' own selectors; every one is scoped by company."""

from __future__ import annotations

import contextlib
import uuid

from django.db.models import Count, Q, QuerySet

from invoices.models import Invoice
from invoices.selectors import invoice_list_for_company
from payments.assets import get_asset
from payments.models import Company, Deposit, LedgerEntry, StaticDepositAddress
from webhooks.models import WebhookEvent
from webhooks.selectors import webhook_list_events


def ledger_entry_list_for_account(*, company: Company, code: str) -> QuerySet[LedgerEntry]:
    """The company's entries in one payment code, newest first (UnsupportedAsset for an unknown code)."""
    code = get_asset(code).code
    return LedgerEntry.objects.filter(account__company=company, account__code=code).order_by(
        "-created_at", "-pk"
    )


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


def invoice_events_for_company(*, company: Company, invoice_id: uuid.UUID | str) -> QuerySet[WebhookEvent]:
    """The invoice's webhook events, oldest first: its status timeline."""
    return (
        webhook_list_events(company=company, family=WebhookEvent.Family.INVOICE)
        .filter(object_id=str(invoice_id))
        .order_by("created_at", "pk")
    )


def static_address_list_for_company(*, company: Company) -> QuerySet[StaticDepositAddress]:
    return (
        StaticDepositAddress.objects.filter(company=company)
        .select_related("deposit_address")
        .order_by("-created_at", "-pk")
    )


def deposit_list_for_company(*, company: Company) -> QuerySet[Deposit]:
    """Transfers routed to the company's addresses (invoices and static), newest first."""
    return Deposit.objects.filter(company=company).order_by("-seen_at", "-pk")

from __future__ import annotations

from uuid import UUID

from django.db.models import Prefetch, QuerySet

from invoices.models import Invoice
from payments.errors import NotFound
from payments.models import Company, Deposit


def _with_details(invoices: QuerySet[Invoice]) -> QuerySet[Invoice]:
    return invoices.select_related("company", "deposit_address").prefetch_related(
        "items",
        Prefetch(
            "deposit_address__deposits",
            queryset=Deposit.objects.order_by("seen_at", "pk"),
            to_attr="transactions",
        ),
    )


def invoice_get_public(*, invoice_id: UUID | str) -> Invoice:
    invoice = _with_details(Invoice.objects.filter(pk=invoice_id)).first()
    if invoice is None:
        raise NotFound("No such invoice.")
    return invoice


def invoice_get_for_company(*, company: Company, invoice_id: UUID | str) -> Invoice:
    invoice = _with_details(Invoice.objects.filter(pk=invoice_id, company=company)).first()
    if invoice is None:
        raise NotFound("No such invoice.")
    return invoice


def invoice_list_for_company(*, company: Company, status: str | None = None) -> QuerySet[Invoice]:
    invoices = Invoice.objects.filter(company=company)
    if status:
        invoices = invoices.filter(status=status)
    return _with_details(invoices).order_by("-created_at", "-pk")

from __future__ import annotations

import contextlib
import functools
import json
import uuid
from decimal import Decimal
from itertools import accumulate
from uuid import UUID

from django.db import connection
from django.db.models import Count, Prefetch, Q, QuerySet

from core.errors import FieldError, NotFound, ValidationFailed
from core.rawread import ModelColumns
from invoices.models import Invoice, InvoiceItem
from payments.models import Company, Deposit, DepositAddress
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
    _attach(invoice, items, has_deposits=True)
    return invoice


def _attach(invoice: Invoice, items: list[InvoiceItem], *, has_deposits: bool) -> None:
    """Give `invoice` its items and its address's deposits, as `_with_details` would."""
    invoice._prefetched_objects_cache = {"items": items}  # type: ignore[attr-defined]
    if invoice.deposit_address is not None:
        transactions: list[Deposit] = []
        if has_deposits:  # the query is built only then: building it costs more than the rest of the read
            deposits = Deposit.objects.filter(deposit_address_id=invoice.deposit_address.pk)
            transactions = list(deposits.order_by("seen_at", "pk"))
        invoice.deposit_address.transactions = transactions  # type: ignore[attr-defined]


class _DetailsRead:
    """PostgreSQL: `_one_with_details` by primary key as one statement, built once per process (the ORM
    would compile it on every call, which costs more than running it; core.rawread). The items come in
    the invoice's row as an array of JSON objects, the price as text so it stays the exact Decimal stored;
    the deposits are read only when the address has any, so a pay page polled while it waits for payment
    costs one query."""

    def __init__(self) -> None:
        quote = connection.ops.quote_name
        self.invoice = ModelColumns(Invoice, "i")
        self.company = ModelColumns(Company, "c")
        self.address = ModelColumns(DepositAddress, "a")
        item, deposit = InvoiceItem._meta, Deposit._meta
        self.sql = f"""
            SELECT {self.invoice.sql}, {self.company.sql}, {self.address.sql},
                EXISTS (
                    SELECT 1 FROM {quote(deposit.db_table)} AS d
                    WHERE d.deposit_address_id = i.deposit_address_id
                ),
                ARRAY (
                    SELECT jsonb_build_object('id', t.id, 'position', t.position, 'name', t.name,
                        'price', t.price::text)
                    FROM {quote(item.db_table)} t WHERE t.invoice_id = i.id ORDER BY t.position
                )
            FROM {quote(Invoice._meta.db_table)} i
            JOIN {quote(Company._meta.db_table)} c ON c.id = i.company_id
            LEFT JOIN {quote(DepositAddress._meta.db_table)} a ON a.id = i.deposit_address_id
            WHERE i.id = %s"""  # noqa: S608 - table and column names from the models; the id is a parameter

    def __call__(self, invoice_id: UUID | str, company: Company | None) -> Invoice:
        try:
            key = invoice_id if isinstance(invoice_id, UUID) else UUID(str(invoice_id))
        except ValueError:
            raise NotFound("No such invoice.") from None
        sql, params = self.sql, [key]
        if company is not None:
            sql, params = f"{sql} AND i.company_id = %s", [key, company.pk]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            row = cursor.fetchone()
        if row is None:
            raise NotFound("No such invoice.")
        ends = list(accumulate((len(self.invoice), len(self.company), len(self.address))))
        invoice, owner = self.invoice.build(row[: ends[0]]), self.company.build(row[ends[0] : ends[1]])
        assert invoice is not None and owner is not None  # the primary key and an inner join
        invoice.company = owner
        invoice.deposit_address = self.address.build(row[ends[1] : ends[2]])
        has_deposits, item_rows = row[ends[2]], row[ends[2] + 1]
        items = []
        for raw in item_rows:
            values = json.loads(raw) if isinstance(raw, str) else raw
            price = Decimal(values["price"])
            items.append(
                InvoiceItem(
                    id=values["id"],
                    invoice=invoice,
                    position=values["position"],
                    name=values["name"],
                    price=price,
                )
            )
        _attach(invoice, items, has_deposits=has_deposits)
        return invoice


@functools.cache
def _details_read() -> _DetailsRead:
    return _DetailsRead()


def invoice_get_public(*, invoice_id: UUID | str) -> Invoice:
    if connection.vendor == "postgresql":
        return _details_read()(invoice_id, None)
    return _one_with_details(Invoice.objects.filter(pk=invoice_id))


def invoice_get_for_company(*, company: Company, invoice_id: UUID | str) -> Invoice:
    if connection.vendor == "postgresql":
        return _details_read()(invoice_id, company)
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


def invoice_deposit_address(invoice_id: str) -> DepositAddress:
    """chains.unrouted's "invoice" target: the address (and tag) a person routes an unrouted deposit to."""
    try:
        pk = UUID(invoice_id)
    except ValueError as exc:
        raise NotFound(f"No invoice {invoice_id}.") from exc
    invoice = Invoice.objects.select_related("deposit_address__company").filter(pk=pk).first()
    if invoice is None:
        raise NotFound(f"No invoice {invoice_id}.")
    if invoice.deposit_address is None:
        raise ValidationFailed(
            [
                FieldError(
                    "invoice", "not_filled", "the client has not chosen an asset: the invoice has no address"
                )
            ]
        )
    return invoice.deposit_address

"""The one-statement read of an invoice with its details on PostgreSQL (`invoices.selectors._DetailsRead`)
gives exactly what the ORM read gives, for every shape of invoice, and stays one query while nothing was
paid."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.errors import NotFound
from invoices import selectors
from invoices.api.serializers import invoice_representation
from invoices.models import Invoice
from invoices.services import ItemInput
from tests import chain
from tests.factories import CompanyFactory, InvoiceFactory

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

ITEMS = [
    ItemInput("Beans, 1 kg", Decimal("12.345")),
    ItemInput("Mug", Decimal("3")),
    ItemInput("Gift", Decimal("0")),
]


def _orm(invoice: Invoice, company=None) -> Invoice:
    found = Invoice.objects.filter(pk=invoice.pk, **({"company": company} if company else {}))
    return selectors._one_with_details(found)


def _same(read: Invoice, orm: Invoice) -> None:
    for view in ("create", "read", "fill"):
        assert invoice_representation(read, view=view) == invoice_representation(orm, view=view)
    assert [(i.pk, i.position, i.name, i.price) for i in read.items.all()] == [
        (i.pk, i.position, i.name, i.price) for i in orm.items.all()
    ]
    assert read.company.signing_secret_encrypted == orm.company.signing_secret_encrypted
    if orm.deposit_address is not None:
        assert read.deposit_address.transactions == orm.deposit_address.transactions


@pytest.mark.parametrize("shape", ["created", "filled", "paid twice", "fixed asset"])
def test_the_statement_reads_what_the_orm_reads(shape):
    kwargs = {"items": ITEMS}
    if shape == "filled":
        kwargs["code"] = "btc"
    if shape == "fixed asset":
        kwargs.update(payment_currency="eth", code="eth")
    invoice = InvoiceFactory(**kwargs)
    if shape == "paid twice":
        invoice = InvoiceFactory(items=ITEMS, code="btc")
        chain.pay(invoice, Decimal("0.0001"), blocks=1)
        chain.pay(invoice, Decimal("0.00002"))

    read = selectors.invoice_get_public(invoice_id=invoice.pk)

    _same(read, _orm(invoice))
    assert read.items.all()[0].price == Decimal("12.35")  # exact, as stored (half up to cents)
    if shape == "paid twice":
        assert len(read.deposit_address.transactions) == 2


def test_one_query_until_something_is_paid_then_two():
    invoice = InvoiceFactory(items=ITEMS, code="btc")

    with CaptureQueriesContext(connection) as unpaid:
        selectors.invoice_get_public(invoice_id=invoice.pk)
    chain.pay(invoice, Decimal("0.0001"))
    with CaptureQueriesContext(connection) as paid:
        read = selectors.invoice_get_public(invoice_id=invoice.pk)

    assert (len(unpaid), len(paid)) == (1, 2)
    assert len(read.deposit_address.transactions) == 1


def test_the_company_read_finds_only_its_own_invoices():
    invoice, stranger = InvoiceFactory(items=ITEMS), CompanyFactory()

    _same(selectors.invoice_get_for_company(company=invoice.company, invoice_id=invoice.pk), _orm(invoice))
    with pytest.raises(NotFound):
        selectors.invoice_get_for_company(company=stranger, invoice_id=invoice.pk)
    with pytest.raises(NotFound):
        selectors.invoice_get_public(invoice_id="not-a-uuid")
    with pytest.raises(NotFound):
        selectors.invoice_get_public(invoice_id="00000000-0000-0000-0000-000000000000")

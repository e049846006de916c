"""`insert_together`: new rows of several models in one statement, with exact values and drawn keys, written
whole or not at all (also with no transaction around it), on PostgreSQL and on SQLite."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext

from core.bulkinsert import TOGETHER_MAX_ROWS, Expr, Source, insert_together
from invoices.models import Invoice, InvoiceItem
from tests.factories import CompanyFactory
from webhooks.models import WebhookEvent

EXACT = Decimal("123456789012.123456789012345678")


def _rows(company, positions=(0, 1, 2)):
    invoice = Invoice(company=company, invoice_currency="usd", total=EXACT)
    items = [
        InvoiceItem(invoice=invoice, position=position, name=f"it's item {position}, \\N", price=EXACT)
        for position in positions
    ]
    event = WebhookEvent(
        company=company, family="invoice", object_id=str(invoice.pk), event_status="created", body='{"a": 1}'
    )
    return invoice, items, event


@pytest.mark.django_db
def test_writes_every_group_with_exact_values_and_sets_drawn_keys_in_order():
    company = CompanyFactory()
    invoice, items, event = _rows(company)

    with CaptureQueriesContext(connection) as queries:
        insert_together([invoice], items, [event])

    assert len(queries) == (1 if connection.vendor == "postgresql" else 5)  # SQLite: BEGIN, 3 INSERTs, COMMIT
    stored = Invoice.objects.get(pk=invoice.pk)
    assert stored.total == EXACT and stored.created_at == invoice.created_at and stored.status == "created"
    assert [(i.pk, i.position, i.name, i.price) for i in stored.items.order_by("position")] == [
        (i.pk, i.position, i.name, EXACT) for i in items
    ]
    assert all(item.pk for item in items)
    assert WebhookEvent.objects.get(pk=event.pk).object_id == str(invoice.pk)
    assert not invoice._state.adding and not any(item._state.adding for item in items)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "positions",
    [(0, 0), (*range(TOGETHER_MAX_ROWS), 0)],  # the last item breaks (invoice, position)
    ids=["one statement", "COPY"],
)
def test_a_refused_group_leaves_no_row_of_any_group_without_a_transaction_around_it(positions):
    company = CompanyFactory()
    invoice, items, event = _rows(company, positions=positions)

    assert connection.get_autocommit()
    with pytest.raises(IntegrityError):
        insert_together([invoice], items, [event])

    assert not Invoice.objects.exists()
    assert not InvoiceItem.objects.exists()
    assert not WebhookEvent.objects.exists()


@pytest.mark.django_db
def test_empty_groups_are_left_out():
    company = CompanyFactory()
    invoice, _, _ = _rows(company)

    insert_together([invoice], [], [])
    insert_together()

    assert Invoice.objects.filter(pk=invoice.pk).exists()


@pytest.mark.django_db
def test_more_rows_than_one_statement_takes_are_written_with_copy():
    company = CompanyFactory()
    invoice, items, event = _rows(company, positions=range(TOGETHER_MAX_ROWS))  # 2 rows more than the limit

    with CaptureQueriesContext(connection) as queries:
        insert_together([invoice], items, [event])

    assert not any(q["sql"].startswith("WITH insert_0") for q in queries)
    stored = list(Invoice.objects.get(pk=invoice.pk).items.order_by("position"))
    assert [(i.pk, i.position, i.price) for i in stored] == [(i.pk, i.position, EXACT) for i in items]
    assert WebhookEvent.objects.filter(pk=event.pk).exists()


@pytest.mark.django_db
def test_an_invoice_of_twenty_thousand_items_is_created(api):
    # 80,000 values: more than one PostgreSQL statement can carry (65,535), in a body under the 1 MiB limit.
    items = [{"name": "", "price": 1}] * 20_000

    response = api.post("/api/invoices/v1/regular", {"invoiceCurrency": "usd", "items": items}, format="json")

    assert response.status_code == 201, response.content[:300]
    assert len(response.json()["invoiceContent"]["items"]) == 20_000
    assert InvoiceItem.objects.filter(invoice_id=response.json()["id"]).count() == 20_000


@pytest.mark.django_db
@pytest.mark.filterwarnings("ignore:DateTimeField .* received a naive datetime")
@pytest.mark.parametrize("rows", [1, TOGETHER_MAX_ROWS + 1], ids=["one statement", "COPY"])
def test_uuids_and_datetimes_are_written_as_the_orm_writes_them(rows):
    import uuid
    from datetime import datetime, timedelta, timezone

    company = CompanyFactory()
    aware = datetime(2026, 5, 1, 12, 30, 15, 123456, tzinfo=timezone(timedelta(hours=-5)))
    naive = datetime(2026, 5, 1, 12, 30, 15, 123456)  # Django reads it in the default time zone, warning
    token = uuid.uuid4()

    def event(at):
        return WebhookEvent(
            company=company, family="invoice", object_id="x", body="{}", next_attempt_at=at, lease_token=token
        )

    for at in (aware, naive):
        written = [event(at) for _ in range(rows)]
        insert_together(written)
        twin = event(at)
        twin.save()  # the ORM's own preparation of the same values
        expected = WebhookEvent.objects.values_list("next_attempt_at", "lease_token").get(pk=twin.pk)
        stored = WebhookEvent.objects.filter(pk__in=[e.pk for e in written])
        assert set(stored.values_list("next_attempt_at", "lease_token")) == {expected}


@pytest.mark.postgres
@pytest.mark.django_db
@pytest.mark.parametrize("has_row", [True, False], ids=["a row", "no row"])
def test_from_a_source_the_rows_read_its_row_or_none_is_written(has_row):
    company = CompanyFactory()
    invoice, items, event = _rows(company, positions=(0,))
    invoice.invoice_currency = Expr("src.currency")
    event.body = Expr("replace(%s::text, '<n>', src.n::text)", ('{"n": <n>}',))
    source = Source(
        ctes="src AS (SELECT %s::text AS currency, 41 + 1 AS n WHERE %s)",
        params=["eur", has_row],
        name="src",
        selects=("(SELECT n FROM src)", "(SELECT currency FROM src)"),
    )

    selected = insert_together([invoice], items, [event], source=source)

    assert selected == ((42, "eur") if has_row else (None, None))
    if has_row:
        assert Invoice.objects.get(pk=invoice.pk).invoice_currency == "eur"
        assert WebhookEvent.objects.get().body == '{"n": 42}'
        assert items[0].pk and InvoiceItem.objects.get().pk == items[0].pk
        assert not invoice._state.adding
    else:
        assert not Invoice.objects.exists() and not InvoiceItem.objects.exists()
        assert not WebhookEvent.objects.exists()
        assert invoice._state.adding and items[0].pk is None  # left unsaved


@pytest.mark.postgres
@pytest.mark.django_db
def test_from_a_source_each_group_is_one_row():
    company = CompanyFactory()
    invoice, items, event = _rows(company, positions=(0, 1))

    with pytest.raises(ValueError, match="one row per group"):
        insert_together([invoice], items, [event], source=Source("src AS (SELECT 1)", [], "src", ()))

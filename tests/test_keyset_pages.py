"""Keyset pages of the API lists (`after`): every row once, newest first, at any depth; bad positions 400."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from core.keyset import parse_position, position_text
from invoices.models import Invoice
from tests.factories import InvoiceFactory

pytestmark = pytest.mark.django_db

INVOICES = "/api/invoices/v1/regular"


def _walk(api: APIClient, url: str) -> list[dict]:  # type: ignore[type-arg]
    """Every page from `url` on, following `next` links."""
    pages = []
    while url:
        response = api.get(url)
        assert response.status_code == 200, response.content
        pages.append(response.json())
        url = pages[-1]["next"]
    return pages


def test_after_pages_list_every_invoice_once_newest_first(api, merchant) -> None:  # type: ignore[no-untyped-def]
    invoices = [InvoiceFactory(company=merchant.company) for _ in range(7)]
    # Three share one created_at: the primary key orders them, none is skipped or repeated at a page edge.
    tie = timezone.now() - timedelta(days=1)
    Invoice.objects.filter(pk__in=[i.pk for i in invoices[2:5]]).update(created_at=tie)

    pages = _walk(api, f"{INVOICES}?limit=2&after=")

    listed = [row["id"] for page in pages for row in page["results"]]
    expected = [str(pk) for pk in Invoice.objects.order_by("-created_at", "-pk").values_list("pk", flat=True)]
    assert listed == expected and len(listed) == 7
    assert [len(page["results"]) for page in pages] == [2, 2, 2, 1]
    assert {page["count"] for page in pages} == {None}
    assert {page["previous"] for page in pages} == {None}
    assert pages[-1]["next"] is None


def test_after_pages_keep_the_filters(api, merchant) -> None:  # type: ignore[no-untyped-def]
    done = [InvoiceFactory(company=merchant.company) for _ in range(3)]
    Invoice.objects.filter(pk__in=[i.pk for i in done]).update(status="done")
    InvoiceFactory(company=merchant.company)  # created

    pages = _walk(api, f"{INVOICES}?status=done&limit=1&after=")

    assert sorted(row["id"] for page in pages for row in page["results"]) == sorted(str(i.pk) for i in done)


def test_a_position_from_another_merchant_shows_only_your_rows(api, merchant, other_merchant) -> None:  # type: ignore[no-untyped-def]
    mine = InvoiceFactory(company=merchant.company)
    theirs = InvoiceFactory(company=other_merchant.company)
    InvoiceFactory(company=other_merchant.company)  # newer than `theirs`

    page = api.get(INVOICES, {"after": position_text(Invoice.objects.get(pk=theirs.pk))}).json()

    assert {row["id"] for row in page["results"]} <= {str(mine.pk)}


@pytest.mark.parametrize(
    "query",
    [
        {"after": "not-a-position"},
        {"after": "MTIz"},  # base64 of "123": no key
        {"after": "OTk5OTk5OTk5OTk5OTk5OTk5OTk5Xzg"},  # a time far past any date
        {"after": "", "offset": "0"},  # one way of paging at a time
    ],
)
def test_a_bad_position_is_a_400_naming_after(api, merchant, query) -> None:  # type: ignore[no-untyped-def]
    response = api.get(INVOICES, query)

    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/problem+json")
    assert [error["field"] for error in response.json()["errors"]] == ["after"]


@pytest.mark.parametrize("path", ["/api/transactions/withdrawals", "/api/webhooks/events"])
def test_every_list_pages_by_position(api, merchant, path) -> None:  # type: ignore[no-untyped-def]
    InvoiceFactory(company=merchant.company)  # its webhook events fill the events list

    response = api.get(path, {"after": ""})

    assert response.status_code == 200
    assert response.json()["count"] is None


def test_a_position_round_trips(merchant) -> None:  # type: ignore[no-untyped-def]
    invoice = Invoice.objects.get(pk=InvoiceFactory(company=merchant.company).pk)

    position = parse_position(position_text(invoice), Invoice)

    assert position is not None
    assert (position.created_at, position.pk) == (invoice.created_at, invoice.pk)

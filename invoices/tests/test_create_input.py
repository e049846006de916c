"""`InvoiceCreateInputSerializer.direct_check`, run by `validated` before the serializer, answers exactly
as the serializer: the same values for what it accepts, the serializer's errors for the rest."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.api.validation import validated
from invoices.api.serializers import InvoiceCreateInputSerializer
from invoices.rules import ITEM_NAME_MAX_LENGTH
from tests.inputs import by_serializer, by_validated, plain, serializer_runs

USUAL = {"invoiceCurrency": "usd", "items": [{"name": "Coffee", "price": Decimal("4.5")}]}

currencies = st.sampled_from(
    ["usd", " USD ", "eur", "Eur\n", "xyz", "", "  ", "us\x00d", "u\u017fd"]
) | st.text(max_size=5)
names = (
    st.sampled_from(["Coffee", "", " padded ", "x" * ITEM_NAME_MAX_LENGTH, "x" * (ITEM_NAME_MAX_LENGTH + 1)])
    | st.sampled_from(["nul\x00", "lone \ud800 surrogate", "Café ☕", "\U0001f600"])
    | st.text(max_size=12)
    | st.none()
    | st.integers()
)
prices = (
    st.decimals(allow_nan=True, allow_infinity=True, places=None)
    | st.sampled_from([Decimal("4.5"), Decimal("-1"), Decimal("0"), Decimal("1E+30"), Decimal("1E-41")])
    | st.sampled_from(["4.50", " 4.5", "1_000", "1e2", "+1", "", "abc", "٣"])
    | st.integers()
    | st.booleans()
    | st.none()
    | st.text(max_size=6)
)
items = st.fixed_dictionaries(
    {}, optional={"name": names, "price": prices, "extra": st.just(1), "Name": st.just("x")}
) | st.sampled_from([None, "item", 3, []])
bodies = st.fixed_dictionaries(
    {},
    optional={
        "invoiceCurrency": currencies | st.none() | st.integers() | st.booleans(),
        "items": st.lists(items, max_size=4) | st.sampled_from([None, "items", {}, 0]),
        "isMerchantPaysFee": st.booleans() | st.sampled_from([None, 0, 1, "true", "false"]),
        "paymentCurrency": st.sampled_from([None, "btc", "BTC", "nope", ""]),
        "redirectURL": st.sampled_from([None, "", "https://shop.example/done", "javascript:alert(1)"]),
        "unknown": st.just("ignored by the serializer"),
    },
) | st.sampled_from([None, [], "body", 1, True])

# Bodies one value away from the usual: most of them take the direct check, which the test must reach.
near_usual = st.fixed_dictionaries(
    {
        "invoiceCurrency": st.sampled_from(["usd", " USD ", "eur"]) | currencies,
        "items": st.lists(
            st.fixed_dictionaries({"name": st.sampled_from(["Coffee", ""]) | names, "price": prices}),
            min_size=1,
            max_size=3,
        ),
    },
    optional={"isMerchantPaysFee": st.booleans() | st.none()},
)


def _by_serializer(data: Any) -> tuple[str, Any]:
    return by_serializer(InvoiceCreateInputSerializer, data)


def _by_input(data: Any) -> tuple[str, Any]:
    return by_validated(InvoiceCreateInputSerializer, data)


@pytest.mark.django_db
@settings(max_examples=600, deadline=None)
@given(bodies | near_usual)
def test_the_same_answer_as_the_serializer_for_any_body(data):
    assert _by_input(data) == _by_serializer(data)


EDGES = [
    {"name": "x" * ITEM_NAME_MAX_LENGTH},
    {"name": "x" * (ITEM_NAME_MAX_LENGTH + 1)},
    {"name": "nul\x00"},
    {"name": "lone \udc00"},
    {"name": " kept as sent "},
    {"name": None},
    {"price": None},
    {"price": True},
    {"price": "4.5"},
    {"price": 4},
    {"price": Decimal("1E-41")},
]


@pytest.mark.django_db
@pytest.mark.parametrize("change", EDGES)
def test_the_same_answer_at_each_edge_of_an_item(change):
    data = {**USUAL, "items": [*USUAL["items"], {**USUAL["items"][0], **change}]}
    assert _by_input(data) == _by_serializer(data)


@pytest.mark.django_db
@pytest.mark.parametrize("currency", ["usd", " USD ", "EUR", "", "  ", "u\u017fd", "us\x00d", None, 1])
def test_the_same_answer_for_each_kind_of_currency(currency):
    data = {**USUAL, "invoiceCurrency": currency}
    assert _by_input(data) == _by_serializer(data)


@pytest.mark.django_db
def test_the_usual_body_is_checked_without_the_serializer(monkeypatch):
    serializer_runs(monkeypatch, InvoiceCreateInputSerializer, allowed=False)
    values = validated(
        InvoiceCreateInputSerializer,
        {
            **USUAL,
            "invoiceCurrency": " USD",
            "isMerchantPaysFee": True,
            "items": [*USUAL["items"], {"name": "", "price": 3}],
        },
    )

    monkeypatch.undo()
    assert values == {
        "invoiceCurrency": "usd",
        "items": [{"name": "Coffee", "price": Decimal("4.5")}, {"name": "", "price": Decimal(3)}],
        "isMerchantPaysFee": True,
    }
    assert (
        plain(values)
        == _by_serializer(
            {
                **USUAL,
                "invoiceCurrency": " USD",
                "isMerchantPaysFee": True,
                "items": [*USUAL["items"], {"name": "", "price": 3}],
            }
        )[1]
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body",
    [
        {
            **USUAL,
            "paymentCurrency": "btc",
        },  # the merchant's fixed asset: the serializer checks it is offered
        {
            **USUAL,
            "items": [{"name": "Coffee", "price": "4.5", "sku": "A1"}],
        },  # a key the check does not know
        {**USUAL, "items": [{"name": "nul\x00", "price": 1}]},  # refused: the serializer words the error
    ],
)
def test_other_bodies_go_through_the_serializer(monkeypatch, body):
    runs = serializer_runs(monkeypatch, InvoiceCreateInputSerializer, allowed=True)

    assert InvoiceCreateInputSerializer.direct_check(body) is None
    assert _by_input(body) == _by_serializer(body)
    assert runs and runs[0] is body

"""`validated` (core.api.validation) answers exactly as `Serializer(data=...).is_valid()` with
`raise_exception`: the same values, the same error detail, whatever came before it on the same instance."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.exceptions import ValidationError

from core.api.validation import validated
from invoices.api.serializers import InvoiceCreateInputSerializer
from payments.api.serializers import WebhookUrlInputSerializer
from withdrawals.api.serializers import WithdrawInputSerializer

SERIALIZERS = [InvoiceCreateInputSerializer, WithdrawInputSerializer, WebhookUrlInputSerializer]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=8)
    | st.sampled_from(["usd", "btc", "4.5", "-1"]),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)
shaped = st.fixed_dictionaries(
    {},
    optional={
        "invoiceCurrency": json_values,
        "items": st.lists(
            st.fixed_dictionaries({}, optional={"name": json_values, "price": json_values}), max_size=3
        ),
        "isMerchantPaysFee": json_values,
        "webHookUrl": json_values,
        "asset": json_values,
    },
)


def _by_is_valid(serializer_class: type, data: Any) -> tuple[str, Any]:
    serializer = serializer_class(data=data)
    try:
        serializer.is_valid(raise_exception=True)
    except ValidationError as exc:
        return "error", _plain(exc.detail)
    return "ok", serializer.validated_data


def _by_validated(serializer_class: type, data: Any) -> tuple[str, Any]:
    try:
        return "ok", validated(serializer_class, data)
    except ValidationError as exc:
        return "error", _plain(exc.detail)


def _plain(detail: Any) -> Any:
    """Error detail as plain data, with each message's code."""
    if isinstance(detail, dict):
        return {key: _plain(value) for key, value in detail.items()}
    if isinstance(detail, list):
        return [_plain(value) for value in detail]
    return (str(detail), getattr(detail, "code", None))


@pytest.mark.parametrize("serializer_class", SERIALIZERS)
@settings(max_examples=150, deadline=None)
@given(data=json_values | shaped)
def test_validated_answers_as_is_valid(serializer_class, data):
    assert _by_validated(serializer_class, data) == _by_is_valid(serializer_class, data)


def test_a_good_request_after_a_bad_one_is_unaffected():
    good = {"invoiceCurrency": "usd", "items": [{"name": "Tea", "price": 3}]}
    with pytest.raises(ValidationError):
        validated(InvoiceCreateInputSerializer, {"invoiceCurrency": 5, "items": [{"price": "x"}]})

    values = validated(InvoiceCreateInputSerializer, good)

    assert ("ok", values) == _by_is_valid(InvoiceCreateInputSerializer, good)
    assert values["items"][0]["name"] == "Tea"

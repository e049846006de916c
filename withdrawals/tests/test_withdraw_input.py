"""`WithdrawInputSerializer.direct_check`, run by `validated` before the serializer, answers exactly as the
serializer: the same values for what it accepts, the serializer's errors for the rest."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.api.validation import validated
from tests.inputs import by_serializer, by_validated, plain, serializer_runs
from withdrawals.api.serializers import WithdrawInputSerializer

ITEM = {"asset": "btc", "amount": "0.0005", "to": "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"}

texts = (
    st.sampled_from(["btc", " BTC ", "", "   ", "x" * 64, "x" * 65, " " + "x" * 64, "nul\x00", "lone \ud800"])
    | st.sampled_from([ITEM["to"], " " + ITEM["to"], "Café ☕", "\U0001f600"])
    | st.text(max_size=10)
)
amounts = (
    st.decimals(allow_nan=True, allow_infinity=True, places=None)
    | st.sampled_from([Decimal("0.0005"), Decimal("0"), Decimal("-1"), Decimal("1E+40"), Decimal("1E-30")])
    | st.sampled_from(["0.0005", " 1", "1_000", "1e2", "+1", "", "abc", "٣", "0"])
    | st.integers()
    | st.booleans()
    | st.none()
)
others = st.none() | st.integers() | st.booleans() | st.just([]) | st.just({})
items = st.fixed_dictionaries(
    {},
    optional={
        "asset": texts | others,
        "amount": amounts,
        "to": texts | others,
        "tag": texts | others,
        "memo": st.just("a key the serializer ignores"),
    },
) | st.sampled_from([None, "item", 3, []])
bodies = st.fixed_dictionaries(
    {},
    optional={
        "items": st.lists(items, max_size=4) | st.sampled_from([None, "items", {}, 0]),
        "other": st.just(1),
    },
) | st.sampled_from([None, [], "body", 1, True])
# One value away from the usual body: most of these take the direct check, which the test must reach.
near_usual = st.fixed_dictionaries(
    {
        "items": st.lists(
            st.fixed_dictionaries(
                {
                    "asset": st.sampled_from(["btc", " ltc"]) | texts,
                    "amount": st.sampled_from(["0.0005", Decimal("1.5"), 2]) | amounts,
                    "to": st.sampled_from([ITEM["to"], ""]) | texts,
                },
                optional={"tag": st.none() | st.sampled_from(["7", "x" * 64, "x" * 65]) | texts},
            ),
            min_size=1,
            max_size=3,
        )
    }
)


def _by_serializer(data: Any) -> tuple[str, Any]:
    return by_serializer(WithdrawInputSerializer, data)


def _by_input(data: Any) -> tuple[str, Any]:
    return by_validated(WithdrawInputSerializer, data)


EDGES = [
    {"tag": "x" * 64},
    {"tag": "x" * 65},
    {"tag": "nul\x00"},
    {"tag": "lone \ud800"},
    {"tag": 7},
    {"asset": " " + "x" * 64 + " "},
    {"asset": "x" * 65},
    {"asset": "b\x00tc"},
    {"asset": "\ud800"},
    {"to": "bc1\x00"},
    {"to": "\udfff"},
    {"to": None},
    {"amount": None},
]


@settings(max_examples=600, deadline=None)
@given(bodies | near_usual)
def test_the_same_answer_as_the_serializer_for_any_body(data):
    assert _by_input(data) == _by_serializer(data)


@pytest.mark.parametrize("change", EDGES)
def test_the_same_answer_at_each_edge_of_the_fields(change):
    data = {"items": [ITEM, {**ITEM, **change}]}
    assert _by_input(data) == _by_serializer(data)


def test_the_usual_body_is_checked_without_the_serializer(monkeypatch):
    body = {"items": [ITEM, {**ITEM, "asset": " LTC ", "amount": 2, "tag": None}, {**ITEM, "tag": "7"}]}
    serializer_runs(monkeypatch, WithdrawInputSerializer, allowed=False)
    values = validated(WithdrawInputSerializer, body)
    monkeypatch.undo()

    assert values["items"][1] == {"amount": Decimal(2), "tag": None, "to": ITEM["to"], "asset": "LTC"}
    assert ("ok", plain(values)) == _by_serializer(body)


def test_a_bulk_over_the_limit_goes_through_the_serializer(settings, monkeypatch):
    settings.WITHDRAWAL_MAX_ITEMS = 2
    body = {"items": [ITEM] * 3}
    runs = serializer_runs(monkeypatch, WithdrawInputSerializer, allowed=True)

    outcome = _by_input(body)
    assert runs and runs[0] is body
    assert outcome == _by_serializer(body)
    assert outcome[0] == "error"
    assert "At most 2 items per call, got 3." in str(outcome[1])

"""The compiled check of a serializer (core.api.validation) answers as the serializer: for every serializer
the API validates with, on input generated from its own declaration, the compiled check accepts what the
serializer accepts, with the same values, and leaves the rest to it; `validated` answers exactly as
`is_valid`, error detail included."""

from __future__ import annotations

import ast
import functools
import importlib
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from django.http import QueryDict
from hypothesis import event, given, settings
from hypothesis import strategies as st
from rest_framework import fields, serializers
from rest_framework.exceptions import ValidationError

from core.api.validation import UNVOUCHED, compiled, validated
from core.assets import INVOICE_CURRENCIES, all_assets
from invoices.api.serializers import InvoiceCreateInputSerializer
from invoices.rules import ITEM_NAME_MAX_LENGTH
from payments.api.fields import AmountField, StrictCharField
from payments.api.serializers import WebhookUrlInputSerializer
from tests.imports import project_modules
from withdrawals.api.serializers import WithdrawInputSerializer

LTC_ADDRESS = "LT2KVaAy1ppRuxRgrS5RNU3vBsy7RibPeA"
USUAL_INVOICE = {"invoiceCurrency": "USD", "items": [{"name": "T-shirt", "price": "12.50"}]}
USUAL_WITHDRAWAL = {"items": [{"amount": "0.5", "to": LTC_ADDRESS, "asset": "ltc"}]}


def _validated_serializers() -> list[type[serializers.Serializer]]:
    """Every serializer class the project hands to `validated`, read from the source: a new endpoint is
    covered the day it calls `validated`."""
    found: dict[str, type[serializers.Serializer]] = {}
    for module_name, path in sorted(project_modules().items()):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and _is_validated(node.func)):
                continue
            argument = node.args[0]
            assert isinstance(argument, ast.Name), f"{module_name}:{node.lineno}: pass the class by its name"
            serializer_class = getattr(importlib.import_module(module_name), argument.id)
            found[f"{serializer_class.__module__}.{serializer_class.__qualname__}"] = serializer_class
    return [found[name] for name in sorted(found)]


def _is_validated(function: ast.expr) -> bool:
    return (isinstance(function, ast.Name) and function.id == "validated") or (
        isinstance(function, ast.Attribute) and function.attr == "validated"
    )


API_SERIALIZERS = _validated_serializers()


# Shapes the API does not use (yet), for what the compiler reads: validate methods, a renamed source,
# callable defaults, list and dict fields, a nested object that may be null, plain DRF fields.
def _twice(value: str) -> str:
    return value * 2


class _Pair(serializers.Serializer):
    left = serializers.CharField(max_length=3)
    right = serializers.IntegerField(min_value=0, max_value=9, required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["left"] == "no":
            raise serializers.ValidationError("no pair")
        return {**attrs, "checked": True}


class _Shapes(serializers.Serializer):
    word = serializers.CharField(min_length=2, max_length=5, source="text")
    email = serializers.EmailField(required=False, allow_blank=True)
    words = serializers.ListField(child=StrictCharField(max_length=4), max_length=3, required=False)
    amounts = serializers.DictField(child=AmountField(), required=False)
    pair = _Pair(required=False, allow_null=True)
    pairs = _Pair(many=True, required=False, max_length=2)
    flag = serializers.BooleanField(required=False, allow_null=True)
    size = serializers.ChoiceField(choices=["s", "m", "l"], default="m")
    tags = serializers.ListField(child=serializers.CharField(), default=list)
    hidden = serializers.HiddenField(default="secret")
    price = serializers.DecimalField(max_digits=5, decimal_places=2, required=False, allow_null=True)

    def validate_word(self, value: str) -> str:
        if value == "stop":
            raise serializers.ValidationError("stop")
        return _twice(value)


SHAPES: list[type[serializers.Serializer]] = [_Shapes, _Pair]

# --- input generated from a declaration --------------------------------------------------------------------

_CODES = sorted({asset.code for asset in all_assets()} | set(INVOICE_CURRENCIES))
_TOKENS = [
    *_CODES,
    *(code.upper() for code in _CODES[:4]),
    *(f" {code} " for code in _CODES[:4]),
    LTC_ADDRESS,
    "client@example.com",
    "https://shop.example/done",
    "javascript:alert(1)",
    "paid",
    "pending",
    "true",
    "confirm",
]
json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4)
junk = json_scalars | st.just([]) | st.just({}) | st.lists(json_scalars, max_size=2)
numbers_as_text = st.sampled_from(
    ["4.50", "0.5", " 4.5", "1_000", "1e2", "+1", "-0", "0", "-1", "", "abc", "٣", "NaN", "Infinity"]
) | st.sampled_from(["9" * 2000, "1." + "0" * 2000])
decimals = (
    st.decimals(allow_nan=True, allow_infinity=True, places=None)
    | st.decimals(min_value=-1000, max_value=1000, places=2)
    | st.sampled_from([Decimal("1E+30"), Decimal("1E-41"), Decimal("-0")])
)


def _texts(field: fields.CharField) -> st.SearchStrategy[Any]:
    limit = field.max_length or 16
    edges = ["", "  ", " padded ", "x" * limit, "x" * (limit + 1), "x" * 5000]
    edges += ["nul\x00", "lone \ud800", "\udfff", "\t\u3000", "Café ☕"]
    return (
        st.sampled_from(_TOKENS)
        | st.sampled_from(edges)
        | st.text(max_size=limit + 2)
        | st.integers()
        | st.floats()
        | numbers_as_text
    )


def _values(field: fields.Field) -> st.SearchStrategy[Any]:
    """Values for one field: mostly of its kind, valid and not, and any other JSON value."""
    if isinstance(field, serializers.ListSerializer):
        own = st.lists(_values(field.child), max_size=3)
    elif isinstance(field, serializers.Serializer):
        own = _bodies(field, _values)
    elif isinstance(field, fields.ListField):
        own = st.lists(_values(field.child), max_size=4)
    elif isinstance(field, fields.DictField):
        keys = st.sampled_from(_CODES[:3]) | st.text(max_size=3)
        own = st.dictionaries(keys, _values(field.child), max_size=2)
    elif isinstance(field, fields.ChoiceField):
        own = st.sampled_from(list(field.choices)) | st.sampled_from(_TOKENS)
    elif isinstance(field, fields.CharField):
        own = _texts(field)
    elif isinstance(field, fields.DecimalField | fields.IntegerField | fields.FloatField):
        own = decimals | st.integers() | st.floats() | numbers_as_text
    elif isinstance(field, fields.BooleanField):
        own = st.booleans() | st.sampled_from([0, 1, "true", "false", "yes", "null", ""])
    else:
        own = st.sampled_from(_TOKENS)
    return _mostly(own, junk)


def _mostly(usual: st.SearchStrategy[Any], other: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`usual` four times in five (st.one_of would weigh each branch of a one_of inside it alike)."""
    return st.integers(0, 4).flatmap(lambda pick: other if pick == 0 else usual)


_CANDIDATES = [
    *_TOKENS,
    *(["", " padded ", "Café ☕", "\U0001f600", "x" * 64, "7"]),
    *(["0.5", "12.50", "4.5", "0.0005", "100", 3, 2, 1.5, Decimal("4.5"), Decimal("0.0005"), True, False]),
]


def _accepts(field: fields.Field, value: Any) -> bool:
    try:
        field.run_validation(value)
    except Exception:
        return False
    return True


def _valid(field: fields.Field) -> st.SearchStrategy[Any]:
    """Values one field mostly accepts: the candidates it takes; items and members mostly valid."""
    if isinstance(field, serializers.ListSerializer | fields.ListField):
        return st.lists(_near(field.child), min_size=1, max_size=3)
    if isinstance(field, serializers.Serializer):
        return _bodies(field, _near)
    if isinstance(field, fields.DictField):
        return st.dictionaries(st.sampled_from(_CODES[:3]), _near(field.child), max_size=2)
    accepted = [value for value in _CANDIDATES if _accepts(field, value)]
    if isinstance(field, fields.ChoiceField):
        accepted += list(field.choices)
    return st.sampled_from(accepted) if accepted else _values(field)


def _near(field: fields.Field) -> st.SearchStrategy[Any]:
    """Mostly a value the field accepts, sometimes any: most bodies built of these are one value off."""
    return _mostly(_valid(field), _values(field))


def _bodies(
    serializer: serializers.Serializer, values: Callable[[fields.Field], st.SearchStrategy[Any]]
) -> st.SearchStrategy[Any]:
    writable = {name: field for name, field in serializer.fields.items() if not field.read_only}
    required = {name: values(field) for name, field in writable.items() if field.required}
    optional = {name: values(field) for name, field in writable.items() if not field.required}
    extra = {"unknown": json_scalars, "Items": st.just([]), "": st.just(1)}
    return st.fixed_dictionaries(required, optional={**optional, **extra}) | st.fixed_dictionaries(
        {}, optional={**required, **optional, **extra}
    )


@functools.cache
def body_strategy(serializer_class: type[serializers.Serializer]) -> st.SearchStrategy[Any]:
    """Bodies mostly valid or one value off, and bodies of any values; read from the declaration."""
    serializer = serializer_class()
    return _mostly(_bodies(serializer, _near), _bodies(serializer, _values) | junk)


# --- answers ----------------------------------------------------------------------------------------------


def plain(value: Any) -> Any:
    """Dicts (key order aside) and lists as they compare; each value with its type, a Decimal with its
    exponent (4.5 and 4.50 differ on the wire)."""
    if isinstance(value, dict):
        return sorted((key, plain(item)) for key, item in value.items())
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, Decimal):
        return ("decimal", value.as_tuple())
    return (type(value).__name__, value)


def _detail(detail: Any) -> Any:
    """Error detail as plain data, with each message's code."""
    if isinstance(detail, dict):
        return {key: _detail(value) for key, value in detail.items()}
    if isinstance(detail, list):
        return [_detail(value) for value in detail]
    return (str(detail), getattr(detail, "code", None))


def by_is_valid(serializer_class: type[serializers.Serializer], data: Any) -> tuple[str, Any]:
    serializer = serializer_class(data=data)
    try:
        serializer.is_valid(raise_exception=True)
    except ValidationError as exc:
        return "error", _detail(exc.detail)
    return "ok", plain(serializer.validated_data)


def by_validated(serializer_class: type[serializers.Serializer], data: Any) -> tuple[str, Any]:
    try:
        return "ok", plain(validated(serializer_class, data))
    except ValidationError as exc:
        return "error", _detail(exc.detail)


def serializer_runs(monkeypatch: pytest.MonkeyPatch, *, allowed: bool) -> list[Any]:
    """Each input a serializer's own checks run on from now on; with `allowed` off, one fails the test."""
    runs: list[Any] = []
    real: Callable[..., Any] = serializers.Serializer.run_validation

    def run_validation(self: serializers.Serializer, data: Any = fields.empty) -> Any:
        runs.append(data)
        if not allowed:
            raise AssertionError("the serializer ran")
        return real(self, data)

    monkeypatch.setattr(serializers.Serializer, "run_validation", run_validation)
    return runs


# --- every serializer, on generated input ----------------------------------------------------------------


# Serializers that read their input in their own `to_internal_value`: not compiled, the kept instance checks.
NOT_COMPILED = {"InvoiceProceedInputSerializer", "WebhookUrlInputSerializer"}
COMPILED = [cls for cls in API_SERIALIZERS + SHAPES if cls.__name__ not in NOT_COMPILED]


def test_the_serializers_that_read_their_input_themselves_are_not_compiled():
    found = {cls.__name__: cls for cls in API_SERIALIZERS if cls.__name__ in NOT_COMPILED}

    assert set(found) == NOT_COMPILED
    assert [compiled(cls) for cls in found.values()] == [None, None]
    assert all(compiled(cls) is not None for cls in COMPILED)


def test_the_api_serializers_are_found():
    names = {serializer_class.__name__ for serializer_class in API_SERIALIZERS}

    assert {"InvoiceCreateInputSerializer", "WithdrawInputSerializer", "RefundInputSerializer"} <= names
    assert len(names) >= 10


@pytest.mark.django_db
@pytest.mark.parametrize("serializer_class", COMPILED, ids=lambda cls: cls.__name__)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_the_compiled_check_accepts_what_the_serializer_accepts_with_the_same_values(serializer_class, data):
    check = compiled(serializer_class)
    assert check is not None
    body = data.draw(body_strategy(serializer_class))

    answer = check(body)

    event("vouched" if answer is not UNVOUCHED else "left to the serializer")
    expected = by_is_valid(serializer_class, body)
    if answer is UNVOUCHED:
        assert expected[0] == "error"  # JSON it gives up on is refused: else the API would pay the serializer
    else:
        assert ("ok", plain(answer)) == expected


@pytest.mark.django_db
@pytest.mark.parametrize("serializer_class", API_SERIALIZERS + SHAPES, ids=lambda cls: cls.__name__)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_validated_answers_as_is_valid(serializer_class, data):
    body = data.draw(body_strategy(serializer_class))

    assert by_validated(serializer_class, body) == by_is_valid(serializer_class, body)


@pytest.mark.django_db
@pytest.mark.parametrize("serializer_class", API_SERIALIZERS, ids=lambda cls: cls.__name__)
def test_a_query_string_is_left_to_the_serializer(serializer_class):
    query = QueryDict("status=paid&asset=btc&family=invoice")
    check = compiled(serializer_class)

    assert check is None or check(query) is UNVOUCHED
    assert by_validated(serializer_class, query) == by_is_valid(serializer_class, query)


# --- the usual bodies, without the serializer -----------------------------------------------------------


def test_the_usual_invoice_body_is_checked_without_the_serializer(monkeypatch):
    body = {**USUAL_INVOICE, "items": [*USUAL_INVOICE["items"], {"name": "", "price": 3}]}
    expected = by_is_valid(InvoiceCreateInputSerializer, body)
    serializer_runs(monkeypatch, allowed=False)

    values = validated(InvoiceCreateInputSerializer, body)

    assert values == {
        "invoiceCurrency": "usd",
        "items": [{"name": "T-shirt", "price": Decimal("12.50")}, {"name": "", "price": Decimal(3)}],
        "isMerchantPaysFee": False,
    }
    assert ("ok", plain(values)) == expected


def test_the_usual_withdrawal_body_is_checked_without_the_serializer(monkeypatch):
    item = USUAL_WITHDRAWAL["items"][0]
    body = {"items": [item, {**item, "asset": " LTC ", "amount": 2, "tag": None}, {**item, "tag": " 7 "}]}
    expected = by_is_valid(WithdrawInputSerializer, body)
    serializer_runs(monkeypatch, allowed=False)

    values = validated(WithdrawInputSerializer, body)

    assert values["items"][1] == {"amount": Decimal(2), "tag": None, "to": LTC_ADDRESS, "asset": "LTC"}
    assert values["items"][2]["tag"] == " 7 "  # kept as sent: the tag's field does not trim
    assert ("ok", plain(values)) == expected


@pytest.mark.parametrize(
    "body",
    [
        {**USUAL_INVOICE, "items": [{"name": "nul\x00", "price": 1}]},
        {**USUAL_INVOICE, "items": [{"name": "x" * (ITEM_NAME_MAX_LENGTH + 1), "price": 1}]},
        {**USUAL_INVOICE, "items": []},
        {**USUAL_INVOICE, "isMerchantPaysFee": "true"},
        {**USUAL_INVOICE, "invoiceCurrency": "  "},
        {"items": USUAL_INVOICE["items"]},
        [USUAL_INVOICE],
    ],
)
def test_a_refused_invoice_body_is_left_to_the_serializer_and_its_detail(body):
    check = compiled(InvoiceCreateInputSerializer)

    assert check is not None and check(body) is UNVOUCHED
    assert by_validated(InvoiceCreateInputSerializer, body)[0] == "error"
    assert by_validated(InvoiceCreateInputSerializer, body) == by_is_valid(InvoiceCreateInputSerializer, body)


def test_a_bulk_over_the_limit_is_left_to_the_serializer(settings, monkeypatch):
    settings.WITHDRAWAL_MAX_ITEMS = 2
    body = {"items": USUAL_WITHDRAWAL["items"] * 3}
    runs = serializer_runs(monkeypatch, allowed=True)

    outcome = by_validated(WithdrawInputSerializer, body)

    assert runs and runs[0] is body
    assert outcome == by_is_valid(WithdrawInputSerializer, body)
    assert outcome[1] == {"items": [("At most 2 items per call, got 3.", "too_many_items")]}


def test_a_good_request_after_a_bad_one_is_unaffected():
    good = {"invoiceCurrency": "usd", "items": [{"name": "Tea", "price": 3}]}
    with pytest.raises(ValidationError):
        validated(InvoiceCreateInputSerializer, {"invoiceCurrency": 5, "items": [{"price": "x"}]})

    values = validated(InvoiceCreateInputSerializer, good)

    assert ("ok", plain(values)) == by_is_valid(InvoiceCreateInputSerializer, good)
    assert values["items"][0]["name"] == "Tea"


# --- what the compiler reads ------------------------------------------------------------------------------


def test_a_serializer_with_its_own_reading_is_not_compiled():
    assert compiled(WebhookUrlInputSerializer) is None


def test_defaults_sources_and_validate_methods_as_drf_applies_them():
    body = {"word": " abc ", "pair": {"left": "ab"}, "pairs": [{"left": "c", "right": 3}], "hidden": "sent"}

    values = compiled(_Shapes)(body)

    assert values == {
        "text": "abcabc",  # stripped, then validate_word; under its source
        "pair": {"left": "ab", "checked": True},
        "pairs": [{"left": "c", "right": 3, "checked": True}],
        "size": "m",
        "tags": [],
        "hidden": "secret",  # a hidden field takes its default, whatever is sent
    }
    assert ("ok", plain(values)) == by_is_valid(_Shapes, body)


@pytest.mark.parametrize(
    "body",
    [
        {"word": "stop"},  # validate_word refuses
        {"word": "ab", "pair": {"left": "no"}},  # the nested validate refuses
        {"word": "ab", "pairs": [{"left": "a"}] * 3},  # max_length of the list
        {"word": "ab", "words": ["abcde"]},  # an item of a list field
        {"word": "ab", "amounts": {"btc": "0"}},  # a value of a dict field
        {"word": "ab", "email": "not an email"},  # a validator the compiler does not inline
        {"word": "ab", "pair": []},
    ],
)
def test_each_refusal_is_left_to_the_serializer(body):
    assert compiled(_Shapes)(body) is UNVOUCHED
    assert by_validated(_Shapes, body)[0] == "error"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"word": "  ab  ", "email": "  "}, {"text": "abab", "email": ""}),  # blank after trimming: ""
        ({"word": 12345}, {"text": "1234512345"}),  # a plain CharField takes a number, as DRF does
        (
            {"word": "ab", "pair": None, "flag": None, "price": None},
            {"pair": None, "flag": None, "price": None},
        ),
        ({"word": "ab", "flag": "yes", "price": "1.5"}, {"flag": True, "price": Decimal("1.50")}),
    ],
)
def test_edges_of_the_fields_answer_as_drf(body, expected):
    values = compiled(_Shapes)(body)

    assert values is not UNVOUCHED
    assert expected.items() <= values.items()
    assert ("ok", plain(values)) == by_is_valid(_Shapes, body)

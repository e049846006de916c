import collections
import json
import re
from decimal import Decimal
from typing import Any

import pytest

from core import jsonutil
from core.money import InvalidAmount


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"amount": Decimal("10.50")}, '{"amount":10.5}'),
        ({"amount": Decimal("0.00012")}, '{"amount":0.00012}'),
        ({"amount": Decimal("1E+2")}, '{"amount":100}'),
        ({"amount": Decimal("0E-8")}, '{"amount":0}'),
        ({"amount": Decimal("-0.50")}, '{"amount":-0.5}'),
        ({"amount": Decimal("0.1")}, '{"amount":0.1}'),
        (
            {"a": Decimal("123456789012345678.123456789012345678")},
            '{"a":123456789012345678.123456789012345678}',
        ),
        ([Decimal("1"), Decimal("2.0"), (Decimal("3.30"),)], "[1,2,[3.3]]"),
        (Decimal("7.70"), "7.7"),
        ({"a": None, "b": True, "c": 3, "d": "x", "e": []}, '{"a":null,"b":true,"c":3,"d":"x","e":[]}'),
    ],
)
def test_dumps_writes_decimals_as_raw_numbers(obj: Any, expected: str) -> None:
    assert jsonutil.dumps(obj) == expected


def test_dumps_keeps_key_order_and_is_compact() -> None:
    body = {"uid": "007-1", "status": "done", "amount": Decimal("5"), "asset": "btc", "a": {"z": 1, "b": 2}}

    text = jsonutil.dumps(body)

    assert text == '{"uid":"007-1","status":"done","amount":5,"asset":"btc","a":{"z":1,"b":2}}'


def test_dumps_keeps_non_ascii() -> None:
    text = jsonutil.dumps({"name": "é", "ключ": "日本"})

    assert text == '{"name":"é","ключ":"日本"}'
    assert "\\u" not in text


def test_dumps_escapes_what_json_requires() -> None:
    assert jsonutil.dumps({"q": 'a"b\\c\n'}) == '{"q":"a\\"b\\\\c\\n"}'


@pytest.mark.parametrize(
    "text",
    ["0:0", "__decimal_0__", "@@0@@", "\x00decimal:0\x00", "0123456789abcdef0123456789abcdef:0"],
)
def test_dumps_does_not_touch_user_strings_that_look_like_markers(text: str) -> None:
    obj = {text: text, "amount": Decimal("1.5"), "list": [text, Decimal("2")]}

    dumped = jsonutil.dumps(obj)

    assert json.loads(dumped) == {text: text, "amount": 1.5, "list": [text, 2]}


def test_dumps_markers_are_fresh_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    # Whatever the marker format is, a string equal to the marker of another call must survive.
    seen: list[str] = []
    real = jsonutil.json.dumps

    def spy(obj: Any, **kwargs: Any) -> str:
        text = real(obj, **kwargs)
        seen.append(text)
        return text

    monkeypatch.setattr(jsonutil.json, "dumps", spy)
    jsonutil.dumps({"amount": Decimal("1")})
    marker = re.fullmatch(r'\{"amount":"(.+)"\}', seen[0])
    assert marker is not None

    result = jsonutil.dumps({"note": marker.group(1), "amount": Decimal("2")})

    assert json.loads(result) == {"note": marker.group(1), "amount": 2}


class _Float(float):
    pass


class _Dict(dict):  # type: ignore[type-arg]
    pass


class _List(list):  # type: ignore[type-arg]
    pass


@pytest.mark.parametrize(
    "obj",
    [
        1.5,
        {"amount": 10.5},
        [Decimal("1"), 0.1],
        {"a": {"b": [float("nan")]}},
        (1, 2.0),
        {1.5: "x"},
        {Decimal("1"): "x"},
        # Subclasses are looked into like the types they extend.
        _Float(1.5),
        {"amount": _Float(1.5)},
        _Dict(amount=1.5),
        {"a": _List(["x", 1.5])},
        collections.OrderedDict(a=(1, {"b": 0.5})),
    ],
)
def test_dumps_refuses_floats(obj: Any) -> None:
    with pytest.raises(TypeError):
        jsonutil.dumps(obj)


@pytest.mark.parametrize("value", [Decimal("NaN"), Decimal("Infinity"), Decimal("-Infinity")])
def test_dumps_refuses_non_finite_decimals(value: Decimal) -> None:
    with pytest.raises(InvalidAmount):
        jsonutil.dumps({"amount": value})


def test_loads_gives_decimals_for_fractions_and_ints_for_integers() -> None:
    data = jsonutil.loads('{"amount": 10.50, "tiny": 1e-8, "big": 1E+2, "n": 3, "s": "0.1"}')

    assert data == {
        "amount": Decimal("10.50"),
        "tiny": Decimal("1E-8"),
        "big": Decimal("1E+2"),
        "n": 3,
        "s": "0.1",
    }
    assert str(data["amount"]) == "10.50"  # exact, not 10.5 from a float
    assert isinstance(data["tiny"], Decimal)
    assert type(data["n"]) is int


def test_loads_accepts_bytes() -> None:
    assert jsonutil.loads('{"é": 0.1}'.encode()) == {"é": Decimal("0.1")}


@pytest.mark.parametrize("text", ['{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}', "NaN"])
def test_loads_refuses_nan_and_infinity(text: str) -> None:
    with pytest.raises(ValueError, match="not a valid JSON number"):
        jsonutil.loads(text)


def test_round_trip_keeps_exact_values() -> None:
    original = {"amount": Decimal("0.000000000000000001"), "fee": Decimal("12345.678900")}

    assert jsonutil.loads(jsonutil.dumps(original)) == original

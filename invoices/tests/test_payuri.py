"""Payment URIs per payment code (exact strings, integer base units from Decimals) and their QR codes, which
must decode back to the same URI."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from decimal import Decimal

import pytest

from chains.payuri import base_units
from invoices.payuri import carries_amount, make_qr, payment_uri, qr_svg

BTC = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"
LTC = "ltc1qg82pk7gx0rlhmtq5wh6t4u4mc7pvwpwmctp9d4"
BCH = "bitcoincash:qpm2qsznhks23z7629mms6s4cwef74vcwvy22gdx6a"
EVM = "0x9858EfFD232B4033E47d90003D41EC34EcaEda94"
SOL = "HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk"
TON = "UQAzWZa6nM5mJev91wGc7VCSfBoIsYRqKJpV78N8Add9-RKY"
TRON = "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH"
NEAR = "98793cd91a3f870fb126f66285808c7e094afcfc4eda8a970f6648cdf0dbd6de"
USDT = "0xdAC17F958D2ee523a2206206994597C13D831ec7"
USDC = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"


@pytest.mark.parametrize(
    ("code", "address", "amount", "tag", "expected"),
    [
        ("btc", BTC, "0.00101000", None, f"bitcoin:{BTC}?amount=0.00101"),
        ("btc", BTC, "0.00000001", None, f"bitcoin:{BTC}?amount=0.00000001"),
        ("btc", BTC, "100", None, f"bitcoin:{BTC}?amount=100"),
        ("BTC", BTC, "1E+1", None, f"bitcoin:{BTC}?amount=10"),
        ("ltc", LTC, "1.5", None, f"litecoin:{LTC}?amount=1.5"),
        (
            "bch",
            BCH,
            "0.00101",
            None,
            "bitcoincash:qpm2qsznhks23z7629mms6s4cwef74vcwvy22gdx6a?amount=0.00101",
        ),
        (
            "bch",
            BCH.removeprefix("bitcoincash:"),
            "0.5",
            None,
            "bitcoincash:qpm2qsznhks23z7629mms6s4cwef74vcwvy22gdx6a?amount=0.5",
        ),
        ("eth", EVM, "0.00101", None, f"ethereum:{EVM}@1?value=1010000000000000"),
        ("eth", EVM, "0.0404", None, f"ethereum:{EVM}@1?value=40400000000000000"),
        ("eth", EVM, "1", None, f"ethereum:{EVM}@1?value=1000000000000000000"),
        (
            "eth",
            EVM,
            "12345.123456789012345678",
            None,
            f"ethereum:{EVM}@1?value=12345123456789012345678",
        ),
        ("eth", EVM, "0.000000000000000001", None, f"ethereum:{EVM}@1?value=1"),
        ("bnb", EVM, "0.2", None, f"ethereum:{EVM}@56?value=200000000000000000"),
        (
            "usdterc20",
            EVM,
            "20.200000",
            None,
            f"ethereum:{USDT}@1/transfer?address={EVM}&uint256=20200000",
        ),
        ("usdc", EVM, "101", None, f"ethereum:{USDC}@1/transfer?address={EVM}&uint256=101000000"),
        ("usdc", EVM, "0.000001", None, f"ethereum:{USDC}@1/transfer?address={EVM}&uint256=1"),
        ("sol", SOL, "0.505000", None, f"solana:{SOL}?amount=0.505"),
        ("ton", TON, "20.2", "17", f"ton://transfer/{TON}?amount=20200000000&text=17"),
        ("ton", TON, "0.000000001", "0", f"ton://transfer/{TON}?amount=1&text=0"),
        ("ton", TON, "1", "a b&c=d", f"ton://transfer/{TON}?amount=1000000000&text=a%20b%26c%3Dd"),
        ("trx", TRON, "400", None, TRON),
        ("trc20usdt", TRON, "100", None, TRON),
        ("near", NEAR, "20.2", None, NEAR),
    ],
)
def test_payment_uri_per_code(code, address, amount, tag, expected):
    uri = payment_uri(code, address=address, amount=Decimal(amount), tag=tag)

    assert uri == expected
    assert "E+" not in uri and "e-" not in uri.split("?")[-1]


@pytest.mark.parametrize(
    ("amount", "decimals", "units"),
    [
        ("0.00101", 18, 1010000000000000),
        ("0.1", 18, 100000000000000000),  # 0.1 as a float would give 100000000000000005551...
        ("20.2", 6, 20200000),
        ("20.2", 9, 20200000000),
        ("0.00000001", 8, 1),
        ("123456789.123456789123456789", 24, 123456789123456789123456789000000),
        ("0", 18, 0),
        ("0.0000001", 6, 1),  # past the chain's places: up to the next unit, never short
    ],
)
def test_base_units_are_exact_integers(amount, decimals, units):
    assert base_units(Decimal(amount), decimals) == units


@pytest.mark.parametrize("amount", ["-1", "NaN", "Infinity"])
def test_base_units_refuse_what_cannot_be_paid(amount):
    with pytest.raises(ValueError):
        base_units(Decimal(amount), 18)


def test_a_code_without_a_rule_is_an_error_not_a_guess():
    from core.errors import UnsupportedAsset

    with pytest.raises(UnsupportedAsset):
        payment_uri("doge", address="D", amount=Decimal(1))


def test_which_qr_codes_carry_the_amount():
    assert [carries_amount(c) for c in ("btc", "eth", "usdc", "ton", "sol")] == [True] * 5
    assert [carries_amount(c) for c in ("trx", "trc20usdt", "near")] == [False] * 3


def _decode(content: str) -> list[str]:
    import zxingcpp
    from PIL import Image

    png = io.BytesIO()
    make_qr(content).save(png, kind="png", scale=6, border=4)  # segno writes PNG without Pillow
    png.seek(0)
    return [result.text for result in zxingcpp.read_barcodes(Image.open(png))]


@pytest.mark.parametrize(
    ("code", "address", "amount", "tag"),
    [
        ("btc", BTC, "0.00101", None),
        ("eth", EVM, "0.00101", None),
        ("usdc", EVM, "101.5", None),
        ("usdterc20", EVM, "20.2", None),
        ("ton", TON, "20.2", "17"),
        ("sol", SOL, "0.505", None),
        ("bch", BCH, "0.00101", None),
        ("trc20usdt", TRON, "100", None),
    ],
)
def test_the_qr_code_decodes_to_the_payment_uri(code, address, amount, tag):
    uri = payment_uri(code, address=address, amount=Decimal(amount), tag=tag)

    assert _decode(uri) == [uri]


def test_the_inline_svg_is_an_accessible_scalable_image():
    svg = qr_svg(f"bitcoin:{BTC}?amount=0.00101", title="QR code <for> this payment")

    root = ET.fromstring(svg)  # noqa: S314 (segno's own output, not untrusted input)
    assert root.tag == "svg"
    assert root.get("role") == "img" and root.get("focusable") == "false"
    assert root.get("viewBox") and root.get("width") is None and root.get("height") is None
    assert root.find("title").text == "QR code <for> this payment"
    assert "http" not in svg and "<script" not in svg

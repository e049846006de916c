import dataclasses
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from core import assets
from core.assets import (
    BASE_ASSETS,
    FIAT_CURRENCIES,
    INVOICE_CURRENCIES,
    Asset,
    all_assets,
    assets_for_base,
    get_asset,
    is_payment_code,
    normalize_code,
    price_decimals,
)
from core.errors import UnsupportedAsset, UnsupportedCurrency
from core.money import decimal_places

# code, base, family, chain decimals, display decimals, amount decimals, tag required
IDENTITY = [
    ("btc", "btc", "btc", 8, 8, 8, False),
    ("eth", "eth", "evm", 18, 8, 18, False),
    ("trc20usdt", "usdt", "tron", 6, 6, 6, False),
    ("usdterc20", "usdt", "evm", 6, 6, 6, False),
    ("usdc", "usdc", "evm", 6, 6, 6, False),
    ("sol", "sol", "sol", 9, 6, 9, False),
    ("ton", "ton", "ton", 9, 6, 9, True),
    ("bnb", "bnb", "evm", 18, 8, 18, False),
    ("ltc", "ltc", "ltc", 8, 8, 8, False),
    ("trx", "trx", "tron", 6, 6, 6, False),
    ("bch", "bch", "bch", 8, 8, 8, False),
    ("near", "near", "near", 24, 6, 18, False),
]

# code, min withdrawal, network fee, confirmations, invoice lifetime (minutes)
FIGURES = [
    ("btc", "0.0005", "0.0001", 2, 120),
    ("eth", "0.005", "0.0005", 12, 30),
    ("trc20usdt", "10", "1", 20, 30),
    ("usdterc20", "20", "3", 12, 30),
    ("usdc", "20", "3", 12, 30),
    ("sol", "0.05", "0.001", 32, 30),
    ("ton", "0.5", "0.05", 1, 30),
    ("bnb", "0.01", "0.0005", 15, 30),
    ("ltc", "0.01", "0.0005", 6, 30),
    ("trx", "10", "1", 20, 30),
    ("bch", "0.005", "0.0001", 6, 30),
    ("near", "0.5", "0.01", 3, 30),
]


def test_registry_lists_every_payment_code_in_order() -> None:
    assert [asset.code for asset in all_assets()] == [row[0] for row in IDENTITY]


@pytest.mark.parametrize(
    ("code", "base", "family", "chain_decimals", "display_decimals", "amount_decimals", "tag_required"),
    IDENTITY,
)
def test_asset_identity_and_decimals(
    code: str,
    base: str,
    family: str,
    chain_decimals: int,
    display_decimals: int,
    amount_decimals: int,
    tag_required: bool,
) -> None:
    asset = get_asset(code)

    assert (asset.code, asset.base, asset.network, asset.family) == (code, base, code, family)
    assert asset.chain_decimals == chain_decimals
    assert asset.display_decimals == display_decimals
    assert asset.amount_decimals == amount_decimals
    assert asset.tag_required is tag_required


@pytest.mark.parametrize(("code", "min_withdrawal", "network_fee", "confirmations", "lifetime"), FIGURES)
def test_asset_figures(
    code: str, min_withdrawal: str, network_fee: str, confirmations: int, lifetime: int
) -> None:
    asset = get_asset(code)

    assert asset.min_withdrawal == Decimal(min_withdrawal)
    assert asset.network_fee == Decimal(network_fee)
    assert asset.confirmations == confirmations
    assert asset.invoice_lifetime == timedelta(minutes=lifetime)
    assert asset.expiry_grace == timedelta(minutes=60)


@pytest.mark.parametrize("asset", all_assets(), ids=lambda asset: asset.code)
def test_defaults_are_consistent(asset: Asset) -> None:
    assert isinstance(asset.min_withdrawal, Decimal)
    assert isinstance(asset.network_fee, Decimal)
    assert asset.display_decimals <= asset.amount_decimals
    assert decimal_places(asset.min_withdrawal) <= asset.display_decimals
    assert decimal_places(asset.network_fee) <= asset.display_decimals
    assert Decimal(0) < asset.network_fee < asset.min_withdrawal
    assert asset.label
    assert asset.explorer_tx_url.startswith("https://")
    assert asset.explorer_tx_url.count("{txid}") == 1


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("btc", "https://mempool.space/tx/abc123"),
        ("eth", "https://etherscan.io/tx/abc123"),
        ("trc20usdt", "https://tronscan.org/#/transaction/abc123"),
        ("usdterc20", "https://etherscan.io/tx/abc123"),
        ("usdc", "https://etherscan.io/tx/abc123"),
        ("sol", "https://solscan.io/tx/abc123"),
        ("ton", "https://tonviewer.com/transaction/abc123"),
        ("bnb", "https://bscscan.com/tx/abc123"),
        ("ltc", "https://blockchair.com/litecoin/transaction/abc123"),
        ("trx", "https://tronscan.org/#/transaction/abc123"),
        ("bch", "https://blockchair.com/bitcoin-cash/transaction/abc123"),
        ("near", "https://nearblocks.io/txns/abc123"),
    ],
)
def test_explorer_link(code: str, expected: str) -> None:
    assert get_asset(code).explorer_link("abc123") == expected


def test_explorer_link_quotes_a_hostile_txid() -> None:
    link = get_asset("btc").explorer_link("../x?y=1#z")

    assert link == "https://mempool.space/tx/..%2Fx%3Fy%3D1%23z"


def test_asset_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        get_asset("btc").confirmations = 0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("given", "code"),
    [("BTC", "btc"), (" Trc20USDT ", "trc20usdt"), ("usdtERC20\n", "usdterc20"), ("NEAR", "near")],
)
def test_lookup_is_case_insensitive_and_strips(given: str, code: str) -> None:
    assert normalize_code(given) == code
    assert get_asset(given).code == code
    assert is_payment_code(given) is True


@pytest.mark.parametrize("code", ["usdt", "xrp", "", "  ", "btc2", "bitcoin", "\uff42\uff54\uff43", None, 5])
def test_unknown_payment_code_is_unsupported_asset(code: Any) -> None:
    with pytest.raises(UnsupportedAsset) as caught:
        get_asset(code)

    assert caught.value.code == "unsupported_asset"
    assert caught.value.status == 400
    assert repr(code) in caught.value.detail
    assert is_payment_code(code) is False


def test_unsupported_asset_detail_is_bounded() -> None:
    with pytest.raises(UnsupportedAsset) as caught:
        get_asset("x" * 10_000)

    assert len(caught.value.detail) < 100


def test_base_assets_in_api_order() -> None:
    assert BASE_ASSETS == ("btc", "eth", "usdt", "sol", "ton", "usdc", "bnb", "ltc", "near", "trx", "bch")
    assert {asset.base for asset in all_assets()} == set(BASE_ASSETS)


@pytest.mark.parametrize(
    ("base", "codes"),
    [
        ("usdt", ["trc20usdt", "usdterc20"]),
        ("USDT", ["trc20usdt", "usdterc20"]),
        ("usdc", ["usdc"]),
        ("btc", ["btc"]),
        ("near", ["near"]),
        ("xrp", []),
        ("trc20usdt", []),
    ],
)
def test_assets_for_base(base: str, codes: list[str]) -> None:
    assert [asset.code for asset in assets_for_base(base)] == codes


@pytest.mark.parametrize(
    ("currency", "decimals"),
    [
        ("usd", 2),
        ("eur", 2),
        ("usdt", 2),
        ("usdc", 2),
        ("sol", 4),
        ("ton", 4),
        ("btc", 6),
        ("eth", 6),
        ("bnb", 8),
        ("bch", 8),
        ("ltc", 8),
        ("trx", 8),
    ],
)
def test_price_decimals_per_invoice_currency(currency: str, decimals: int) -> None:
    assert price_decimals(currency) == decimals
    assert price_decimals(f" {currency.upper()} ") == decimals


def test_invoice_currencies_are_exactly_the_documented_twelve() -> None:
    assert len(INVOICE_CURRENCIES) == 12
    assert sorted(FIAT_CURRENCIES) == ["eur", "usd"]


@pytest.mark.parametrize("currency", ["gbp", "near", "trc20usdt", "", None, 2])
def test_unknown_invoice_currency_is_unsupported_currency(currency: Any) -> None:
    with pytest.raises(UnsupportedCurrency) as caught:
        price_decimals(currency)

    assert caught.value.code == "unsupported_currency"
    assert caught.value.status == 400
    assert repr(currency) in caught.value.detail


# --- per-deployment overrides -----------------------------------------------------------------------------


def test_overrides_change_the_figures() -> None:
    overrides = {
        "BTC": {
            "min_withdrawal": "0.001",
            "network_fee": "0.00002",
            "confirmations": 3,
            "invoice_lifetime_minutes": 90,
            "expiry_grace_minutes": 240,
            "display_decimals": 6,
            "explorer_tx_url": "https://blockstream.info/tx/{txid}",
            "label": "Bitcoin mainnet",
        },
        "trx": {"min_withdrawal": 5},
    }

    with override_settings(ASSET_OVERRIDES=overrides):
        btc = get_asset("btc")
        trx = get_asset("trx")
        eth = get_asset("eth")

    assert btc.min_withdrawal == Decimal("0.001")
    assert isinstance(btc.min_withdrawal, Decimal)
    assert btc.network_fee == Decimal("0.00002")
    assert btc.confirmations == 3
    assert btc.invoice_lifetime == timedelta(minutes=90)
    assert btc.expiry_grace == timedelta(minutes=240)
    assert btc.display_decimals == 6
    assert btc.explorer_link("ff") == "https://blockstream.info/tx/ff"
    assert btc.label == "Bitcoin mainnet"
    assert trx.min_withdrawal == Decimal(5)
    assert eth == assets._DEFAULTS[1]  # untouched codes keep their defaults


def test_overrides_are_dropped_when_the_setting_is_restored() -> None:
    with override_settings(ASSET_OVERRIDES={"btc": {"confirmations": 9}}):
        assert get_asset("btc").confirmations == 9

    assert get_asset("btc").confirmations == 2


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"xrp": {"confirmations": 1}}, "unknown payment code"),
        ({"usdt": {"confirmations": 1}}, "unknown payment code"),
        ({"btc": {"colour": "orange"}}, "unknown field"),
        ({"btc": {"code": "xbt"}}, "unknown field"),
        ({"btc": {"chain_decimals": 2}}, "unknown field"),
        ({"btc": {"invoice_lifetime": 10}}, "unknown field"),
        ({"btc": {"min_withdrawal": 0.001}}, "float"),
        ({"btc": {"min_withdrawal": "abc"}}, "finite"),
        ({"btc": {"min_withdrawal": "0.000000001"}}, "decimal places"),
        ({"btc": {"network_fee": "-1"}}, "negative"),
        ({"btc": {"confirmations": "3"}}, "non-negative int"),
        ({"btc": {"confirmations": True}}, "non-negative int"),
        ({"btc": {"invoice_lifetime_minutes": 0}}, "at least 1"),
        ({"btc": {"display_decimals": 9}}, "at most 8"),
        ({"btc": {"explorer_tx_url": "https://example.com/tx/"}}, "txid"),
        ({"btc": {"explorer_tx_url": "https://example.com/{id}/{txid}"}}, "txid"),
        ({"btc": {"explorer_tx_url": "ftp://example.com/{txid}"}}, "txid"),
        ({"btc": {"label": ""}}, "non-empty"),
        ({"btc": ["confirmations"]}, "must be a dict"),
        (["btc"], "must be a dict"),
    ],
)
def test_bad_overrides_are_refused(overrides: Any, message: str) -> None:
    with override_settings(ASSET_OVERRIDES=overrides), pytest.raises(ImproperlyConfigured, match=message):
        get_asset("btc")


def test_registry_is_built_once_per_setting_value() -> None:
    first = assets._registry()

    assert assets._registry() is first
    with override_settings(ASSET_OVERRIDES={}):
        assert assets._registry() is not first


@pytest.mark.parametrize("code", ["btc", "ltc", "bch"])
def test_a_minimal_withdrawal_below_the_dust_limit_is_refused(code):
    with (
        override_settings(ASSET_OVERRIDES={code: {"min_withdrawal": "0.00000545"}}),
        pytest.raises(ImproperlyConfigured, match=r"below the \w+ dust limit 0\.00000546"),
    ):
        get_asset(code)
    with override_settings(ASSET_OVERRIDES={code: {"min_withdrawal": "0.00000546"}}):
        assert get_asset(code).min_withdrawal == Decimal("0.00000546")

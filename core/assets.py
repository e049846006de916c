"""The one asset registry: payment codes, their figures, and invoice currencies (docs/api.md).

Figures are defaults; a deployment overrides them with the `ASSET_OVERRIDES` setting, e.g.
`{"btc": {"min_withdrawal": "0.001", "confirmations": 3, "invoice_lifetime_minutes": 90}}`.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver

from core.money import MAX_DECIMALS, InvalidAmount, check_places, check_range, to_decimal


@dataclass(frozen=True, kw_only=True)
class Asset:
    code: str  # payment/withdrawal code: asset + network
    base: str  # the webhook `asset` and the `company.assets` entry
    network: str  # the webhook `dchain` and the static-address `network`; equal to code
    family: str  # address format: btc, ltc, bch, evm, tron, ton, sol, near
    chain_decimals: int
    display_decimals: int  # what a client is asked to send is rounded UP to these
    tag_required: bool
    min_withdrawal: Decimal
    network_fee: Decimal  # held and charged on top of each withdrawal's amount
    confirmations: int
    invoice_lifetime: timedelta
    expiry_grace: timedelta = timedelta(minutes=60)  # a processing invoice may wait this long after expiredAt
    explorer_tx_url: str  # template with {txid}
    label: str  # network name for people
    # How a wallet is asked to pay it (chains.payuri): bitcoin, litecoin, bitcoincash (BIP 21), ethereum
    # (EIP-681), solana (Solana Pay), ton (a transfer link), or "" where its wallets share no URI standard.
    uri_scheme: str
    chain_id: int | None = None  # EVM: the mainnet chain id
    contract: str = ""  # a token: its mainnet contract (checksummed)
    fee_coin: str = ""  # the code of the coin its network fees are paid in; "": itself

    @property
    def amount_decimals(self) -> int:
        """Places an amount of this asset may have here: the chain's, capped by the 18-place columns."""
        return min(self.chain_decimals, MAX_DECIMALS)

    def explorer_link(self, txid: str) -> str:
        # Quoted so a hostile txid from a node or a test cannot change the link's path or query.
        return self.explorer_tx_url.format(txid=quote(txid, safe=""))


_LIFETIME = timedelta(minutes=30)
_ETHERSCAN = "https://etherscan.io/tx/{txid}"
_TRONSCAN = "https://tronscan.org/#/transaction/{txid}"

# Display decimals: 8 for btc-like coins (the satoshi) and for eth/bnb (1e-8 is a fraction of a cent and
# every wallet accepts it); 6 for everything else (the stablecoins' and TRX's own unit; for sol, ton and
# near 1e-6 is far below a cent while staying short enough to type). Minimums and fees are a few times the
# usual on-chain cost, so a sweep never spends most of itself on fees.
# fmt: off
_DEFAULTS: tuple[Asset, ...] = (
    Asset(
        code="btc", base="btc", network="btc", family="btc", label="Bitcoin",
        chain_decimals=8, display_decimals=8, tag_required=False,
        min_withdrawal=Decimal("0.0005"), network_fee=Decimal("0.0001"),
        confirmations=2, invoice_lifetime=timedelta(minutes=120),
        explorer_tx_url="https://mempool.space/tx/{txid}",
        uri_scheme="bitcoin",
    ),
    Asset(
        code="eth", base="eth", network="eth", family="evm", label="Ethereum",
        chain_decimals=18, display_decimals=8, tag_required=False,
        min_withdrawal=Decimal("0.005"), network_fee=Decimal("0.0005"),
        confirmations=12, invoice_lifetime=_LIFETIME,
        explorer_tx_url=_ETHERSCAN,
        uri_scheme="ethereum", chain_id=1,
    ),
    Asset(
        code="trc20usdt", base="usdt", network="trc20usdt", family="tron", label="Tether USD (TRON, TRC-20)",
        chain_decimals=6, display_decimals=6, tag_required=False,
        min_withdrawal=Decimal("10"), network_fee=Decimal("1"),
        confirmations=20, invoice_lifetime=_LIFETIME,
        explorer_tx_url=_TRONSCAN,
        uri_scheme="", fee_coin="trx",
    ),
    Asset(
        code="usdterc20", base="usdt", network="usdterc20", family="evm",
        label="Tether USD (Ethereum, ERC-20)",
        chain_decimals=6, display_decimals=6, tag_required=False,
        min_withdrawal=Decimal("20"), network_fee=Decimal("3"),
        confirmations=12, invoice_lifetime=_LIFETIME,
        explorer_tx_url=_ETHERSCAN,
        uri_scheme="ethereum", chain_id=1, contract="0xdAC17F958D2ee523a2206206994597C13D831ec7",
        fee_coin="eth",
    ),
    Asset(
        code="usdc", base="usdc", network="usdc", family="evm", label="USD Coin (Ethereum, ERC-20)",
        chain_decimals=6, display_decimals=6, tag_required=False,
        min_withdrawal=Decimal("20"), network_fee=Decimal("3"),
        confirmations=12, invoice_lifetime=_LIFETIME,
        explorer_tx_url=_ETHERSCAN,
        uri_scheme="ethereum", chain_id=1, contract="0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
        fee_coin="eth",
    ),
    Asset(
        code="sol", base="sol", network="sol", family="sol", label="Solana",
        chain_decimals=9, display_decimals=6, tag_required=False,
        min_withdrawal=Decimal("0.05"), network_fee=Decimal("0.001"),
        confirmations=32, invoice_lifetime=_LIFETIME,  # 32 confirmations: the "finalized" commitment
        explorer_tx_url="https://solscan.io/tx/{txid}",
        uri_scheme="solana",
    ),
    Asset(
        code="ton", base="ton", network="ton", family="ton", label="Toncoin",
        chain_decimals=9, display_decimals=6, tag_required=True,  # exchanges' TON deposits share an address
        min_withdrawal=Decimal("0.5"), network_fee=Decimal("0.05"),
        confirmations=1, invoice_lifetime=_LIFETIME,  # a masterchain-referenced block is final
        explorer_tx_url="https://tonviewer.com/transaction/{txid}",
        uri_scheme="ton",
    ),
    Asset(
        code="bnb", base="bnb", network="bnb", family="evm", label="BNB (BNB Smart Chain)",
        chain_decimals=18, display_decimals=8, tag_required=False,
        min_withdrawal=Decimal("0.01"), network_fee=Decimal("0.0005"),
        confirmations=15, invoice_lifetime=_LIFETIME,
        explorer_tx_url="https://bscscan.com/tx/{txid}",
        uri_scheme="ethereum", chain_id=56,
    ),
    Asset(
        code="ltc", base="ltc", network="ltc", family="ltc", label="Litecoin",
        chain_decimals=8, display_decimals=8, tag_required=False,
        min_withdrawal=Decimal("0.01"), network_fee=Decimal("0.0005"),
        confirmations=6, invoice_lifetime=_LIFETIME,
        explorer_tx_url="https://blockchair.com/litecoin/transaction/{txid}",
        uri_scheme="litecoin",
    ),
    Asset(
        code="trx", base="trx", network="trx", family="tron", label="TRON",
        chain_decimals=6, display_decimals=6, tag_required=False,
        min_withdrawal=Decimal("10"), network_fee=Decimal("1"),
        confirmations=20, invoice_lifetime=_LIFETIME,  # past the 19 blocks that make a TRON block solid
        explorer_tx_url=_TRONSCAN,
        uri_scheme="",
    ),
    Asset(
        code="bch", base="bch", network="bch", family="bch", label="Bitcoin Cash",
        chain_decimals=8, display_decimals=8, tag_required=False,
        min_withdrawal=Decimal("0.005"), network_fee=Decimal("0.0001"),
        confirmations=6, invoice_lifetime=_LIFETIME,
        explorer_tx_url="https://blockchair.com/bitcoin-cash/transaction/{txid}",
        uri_scheme="bitcoincash",
    ),
    Asset(
        code="near", base="near", network="near", family="near", label="NEAR Protocol",
        chain_decimals=24, display_decimals=6, tag_required=False,
        min_withdrawal=Decimal("0.5"), network_fee=Decimal("0.01"),
        confirmations=3, invoice_lifetime=_LIFETIME,
        explorer_tx_url="https://nearblocks.io/txns/{txid}",
        uri_scheme="",
    ),
)
# fmt: on

# docs/api.md order for `company.assets`.
BASE_ASSETS: tuple[str, ...] = (
    "btc",
    "eth",
    "usdt",
    "sol",
    "ton",
    "usdc",
    "bnb",
    "ltc",
    "near",
    "trx",
    "bch",
)

# Price decimal places per invoice currency (docs/api.md).
INVOICE_CURRENCIES: dict[str, int] = {
    "usd": 2,
    "eur": 2,
    "usdt": 2,
    "usdc": 2,
    "sol": 4,
    "ton": 4,
    "btc": 6,
    "eth": 6,
    "bnb": 8,
    "bch": 8,
    "ltc": 8,
    "trx": 8,
}
FIAT_CURRENCIES: frozenset[str] = frozenset({"usd", "eur"})

# Fields a deployment may change; identity fields (code, base, network, family, chain_decimals, tag_required)
# are facts about the chain and the API, not settings.
_DECIMAL_FIELDS = ("min_withdrawal", "network_fee")
_INT_FIELDS = ("display_decimals", "confirmations")
_MINUTE_FIELDS = {"invoice_lifetime_minutes": "invoice_lifetime", "expiry_grace_minutes": "expiry_grace"}
_TEXT_FIELDS = ("explorer_tx_url", "label")


def normalize_code(code: str) -> str:
    return code.strip().lower()


def _normalized_or_none(code: object) -> str | None:
    # Codes come straight from request bodies; a number or null there must be a 400, not a crash.
    return normalize_code(code) if isinstance(code, str) else None


def _shown(code: object) -> str:
    text = repr(code)
    return text if len(text) <= 40 else f"{text[:37]}..."


def _is_link_template(value: str) -> bool:
    # Tried now, so a stray "{id}" fails at startup rather than in the middle of sending a webhook.
    try:
        value.format(txid="")
    except (KeyError, IndexError, ValueError):
        return False
    return "{txid}" in value and value.startswith(("https://", "http://"))


# The smallest output a Bitcoin Core-family node relays (GetDustThreshold, 3 sat/vB: P2PKH 546 sat; P2WPKH
# 294): a minimal withdrawal below it could never be paid.
DUST_LIMITS = {family: Decimal("0.00000546") for family in ("btc", "ltc", "bch")}


def _override_value(code: str, field: str, value: Any, asset: Asset) -> tuple[str, Any]:
    where = f"ASSET_OVERRIDES[{code!r}][{field!r}]"
    if field in _DECIMAL_FIELDS:
        try:
            amount = to_decimal(value)  # refuses floats: "0.1" must be written as a string
            check_places(amount, decimals=asset.amount_decimals)
            check_range(amount)
        except InvalidAmount as exc:
            raise ImproperlyConfigured(f"{where}: {exc}") from exc
        if amount < 0:
            raise ImproperlyConfigured(f"{where} must not be negative.")
        dust = DUST_LIMITS.get(asset.family)
        if field == "min_withdrawal" and dust is not None and amount < dust:
            raise ImproperlyConfigured(
                f"{where} is below the {asset.family} dust limit {dust}: nodes refuse to relay such outputs."
            )
        return field, amount
    if field in _INT_FIELDS or field in _MINUTE_FIELDS:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ImproperlyConfigured(f"{where} must be a non-negative int.")
        if field == "display_decimals" and value > asset.amount_decimals:
            raise ImproperlyConfigured(f"{where} must be at most {asset.amount_decimals}.")
        if field == "invoice_lifetime_minutes" and value == 0:
            raise ImproperlyConfigured(f"{where} must be at least 1.")
        if field in _MINUTE_FIELDS:
            return _MINUTE_FIELDS[field], timedelta(minutes=value)
        return field, value
    if field in _TEXT_FIELDS:
        if not isinstance(value, str) or not value.strip():
            raise ImproperlyConfigured(f"{where} must be a non-empty string.")
        if field == "explorer_tx_url" and not _is_link_template(value):
            raise ImproperlyConfigured(
                f"{where} must be an http(s) URL containing {{txid}} and no other field."
            )
        return field, value
    allowed = sorted((*_DECIMAL_FIELDS, *_INT_FIELDS, *_MINUTE_FIELDS, *_TEXT_FIELDS))
    raise ImproperlyConfigured(f"ASSET_OVERRIDES[{code!r}]: unknown field {field!r}; allowed: {allowed}.")


@functools.cache
def _registry() -> dict[str, Asset]:
    assets = {asset.code: asset for asset in _DEFAULTS}
    overrides = settings.ASSET_OVERRIDES or {}
    if not isinstance(overrides, dict):
        raise ImproperlyConfigured("ASSET_OVERRIDES must be a dict of payment code -> {field: value}.")
    for raw_code, fields in overrides.items():
        code = _normalized_or_none(raw_code)
        if code not in assets:
            raise ImproperlyConfigured(f"ASSET_OVERRIDES: unknown payment code {raw_code!r}.")
        if not isinstance(fields, dict):
            raise ImproperlyConfigured(f"ASSET_OVERRIDES[{raw_code!r}] must be a dict of field -> value.")
        asset = assets[code]
        changes = dict(_override_value(code, field, value, asset) for field, value in fields.items())
        assets[code] = dataclasses.replace(asset, **changes)
    return assets


@receiver(setting_changed)
def _reset_registry(*, setting: str, **kwargs: Any) -> None:
    # override_settings in tests (and anything else changing settings at runtime) must see new figures.
    if setting == "ASSET_OVERRIDES":
        _registry.cache_clear()


def get_asset(code: str) -> Asset:
    asset = _registry().get(_normalized_or_none(code) or "")
    if asset is None:
        # Imported here: core.errors pulls in DRF, whose settings import payments.auth and so the
        # models, which import this module; at module level that cycle breaks app loading.
        from core.errors import UnsupportedAsset

        raise UnsupportedAsset(f"{_shown(code)} is not a supported asset.")
    return asset


def is_payment_code(code: str) -> bool:
    return (_normalized_or_none(code) or "") in _registry()


def all_assets() -> list[Asset]:
    """Every payment code's asset, in registry order (btc, eth, trc20usdt, ... near)."""
    return list(_registry().values())


def assets_for_base(base: str) -> list[Asset]:
    """The payment codes of a base asset (usdt -> trc20usdt, usdterc20); empty for an unknown base."""
    wanted = _normalized_or_none(base)
    return [asset for asset in _registry().values() if asset.base == wanted]


def price_decimals(currency: str) -> int:
    """Decimal places of invoice item prices in this invoice currency (docs/api.md)."""
    places = INVOICE_CURRENCIES.get(_normalized_or_none(currency) or "")
    if places is None:
        from core.errors import UnsupportedCurrency  # see get_asset

        raise UnsupportedCurrency(f"{_shown(currency)} is not a supported invoice currency.")
    return places


def check_amount_decimals(amount: Decimal, code: str, field: str = "amount") -> None:
    """More decimals than the asset carries is refused (ValidationFailed naming `field`), never rounded.

    Counted exactly: normalize() would first round a long value to the context's 28 digits, and
    123456789012345678.000000009999 would pass as 8 decimals.
    """
    from core.errors import FieldError, ValidationFailed  # see get_asset
    from core.money import decimal_places

    decimals = get_asset(code).amount_decimals
    if decimal_places(amount) > decimals:
        message = f"{get_asset(code).code} amounts have at most {decimals} decimals"
        raise ValidationFailed([FieldError(field, "invalid", message)])

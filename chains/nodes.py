"""The node behind each payment code on a real backend: the `CHAIN_NODES` setting, read and checked once.

    CHAIN_NODES='{"ltc": {"url": "http://user:pass@127.0.0.1:19443", "network": "regtest",
                          "deposit_wallet": "kassa-deposits", "payout_wallet": "kassa-payouts"}}'

- `url`: the node's JSON-RPC address with its credentials (never logged).
- `network`: mainnet (the default), testnet or regtest. It picks the address encodings (bc/tb/bcrt,
  ltc/tltc/rltc, bitcoincash/bchtest/bchreg) and the account keys `CHAIN_XPUBS` accepts (xpub/zpub on
  mainnet, tpub/vpub otherwise).
- `deposit_wallet`: the watch-only wallet Kassa creates, loads and extends itself (default
  "kassa-deposits").
- `payout_wallet`: the operator's wallet that pays withdrawals (default: the deposit wallet).
- `fee_fallback`: the fee rate (coin per kvB) used when the node cannot estimate one (default 0.0001).
- `fee_cap`: the highest fee rate (coin per kvB) Kassa pays; above it a payout batch waits (default 0.001).
  A fallback above the cap means: without an estimate from the node, wait.
- `fee_target_blocks`: the confirmation target asked of the fee estimator (default 6).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cache
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed

from core.assets import get_asset
from core.errors import UnsupportedAsset

NETWORKS = ("mainnet", "testnet", "regtest")
_KEYS = {"url", "network", "deposit_wallet", "payout_wallet", "fee_fallback", "fee_cap", "fee_target_blocks"}


@dataclass(frozen=True)
class NodeConfig:
    code: str
    url: str
    network: str
    deposit_wallet: str
    payout_wallet: str
    fee_fallback: Decimal
    fee_cap: Decimal
    fee_target_blocks: int


def network(code: str) -> str:
    """The network a code's addresses and keys belong to: its node's, mainnet when it has no node."""
    entry = _raw().get(code)
    return "mainnet" if entry is None else str(entry.get("network", "mainnet"))


def node_config(code: str) -> NodeConfig:
    configs = _configs()
    if code not in configs:
        raise ImproperlyConfigured(f"CHAIN_NODES has no node for {code}")
    return configs[code]


def _raw() -> dict[str, Any]:
    raw = settings.CHAIN_NODES or {}
    if not isinstance(raw, dict):
        raise ImproperlyConfigured("CHAIN_NODES is a JSON object: payment code -> node")
    return raw


@cache
def _configs() -> dict[str, NodeConfig]:
    # The EVM codes' entries have their own keys (chains.evm.config).
    return {code: _parse(code, entry) for code, entry in _raw().items() if _family(code) != "evm"}


def _family(code: str) -> str:
    try:
        return get_asset(code).family
    except UnsupportedAsset:
        return ""


def _parse(code: str, entry: Any) -> NodeConfig:
    where = f"CHAIN_NODES[{code!r}]"
    url = node_url(where, entry, _KEYS, url_form="http(s)://user:password@host:port", needs="a url")
    net = entry.get("network", "mainnet")
    if net not in NETWORKS:
        raise ImproperlyConfigured(f"{where}.network is one of {', '.join(NETWORKS)}, not {net!r}")
    deposit_wallet = _wallet(where, "deposit_wallet", entry.get("deposit_wallet", "kassa-deposits"))
    payout_wallet = _wallet(where, "payout_wallet", entry.get("payout_wallet", deposit_wallet))
    fallback = _rate(where, "fee_fallback", entry.get("fee_fallback", "0.0001"))
    cap = _rate(where, "fee_cap", entry.get("fee_cap", "0.001"))
    target = entry.get("fee_target_blocks", 6)
    if not isinstance(target, int) or isinstance(target, bool) or not 1 <= target <= 1008:
        raise ImproperlyConfigured(f"{where}.fee_target_blocks is a whole number of blocks from 1 to 1008")
    return NodeConfig(
        code=code,
        url=url,
        network=net,
        deposit_wallet=deposit_wallet,
        payout_wallet=payout_wallet,
        fee_fallback=fallback,
        fee_cap=cap,
        fee_target_blocks=target,
    )


def node_url(where: str, entry: Any, known: set[str], *, url_form: str, needs: str) -> str:
    """The url of a CHAIN_NODES entry, once the entry is an object of `known` keys only."""
    if not isinstance(entry, dict):
        raise ImproperlyConfigured(f"{where} is a JSON object with at least {needs}")
    unknown = set(entry) - known
    if unknown:
        raise ImproperlyConfigured(f"{where} has unknown keys {sorted(unknown)}; known: {sorted(known)}")
    url = entry.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ImproperlyConfigured(f"{where}.url is the node's {url_form}")
    return url


def _wallet(where: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or "/" in value:
        raise ImproperlyConfigured(f"{where}.{key} is a wallet name (no slash)")
    return value


def _rate(where: str, key: str, value: Any) -> Decimal:
    return positive_decimal(where, key, value, what='a positive fee rate in coin per kvB, e.g. "0.0001"')


def positive_decimal(where: str, key: str, value: Any, *, what: str) -> Decimal:
    """A positive amount of a CHAIN_NODES entry, exactly as written: a string, an integer or a JSON number
    (read as the exact decimal it was written as, never a binary float); anything else names `what`."""
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        amount = Decimal(-1)
    if isinstance(value, bool) or not amount.is_finite() or amount <= 0:
        raise ImproperlyConfigured(f"{where}.{key} is {what}")
    return amount


def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting == "CHAIN_NODES":
        _configs.cache_clear()


setting_changed.connect(_reset)

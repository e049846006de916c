"""The node behind each code on the `bitcoincore` backend: its `CHAIN_NODES` entry, read and checked once.

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
from decimal import Decimal
from functools import cache
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed

from chains.nodes import NETWORKS, node_url, positive_decimal, raw_nodes
from core.assets import get_asset
from core.errors import UnsupportedAsset

FAMILIES = frozenset({"btc", "ltc", "bch"})  # the families a Bitcoin Core-compatible node serves
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


def node_config(code: str) -> NodeConfig:
    configs = _configs()
    if code not in configs:
        raise ImproperlyConfigured(f"CHAIN_NODES has no node for {code}")
    return configs[code]


@cache
def _configs() -> dict[str, NodeConfig]:
    # Other backends' entries have their own keys (chains.evm.config).
    return {code: _parse(code, entry) for code, entry in raw_nodes().items() if _family(code) in FAMILIES}


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


def _wallet(where: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or "/" in value:
        raise ImproperlyConfigured(f"{where}.{key} is a wallet name (no slash)")
    return value


def _rate(where: str, key: str, value: Any) -> Decimal:
    return positive_decimal(where, key, value, what='a positive fee rate in coin per kvB, e.g. "0.0001"')


def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting == "CHAIN_NODES":
        _configs.cache_clear()


setting_changed.connect(_reset)

"""The `ton` entry of `CHAIN_NODES`, read and checked once (the ton backend's node, chains.ton.backend).

    CHAIN_NODES='{"ton": {"url": "https://toncenter.com/api/v2", "api_key": "...",
                          "payout_limit": "500", "daily_limit": "2000"}}'

- `url`: toncenter's API v2 base (ending in /api/v2), or a self-hosted ton-http-api's; the tests' devnet
  serves one too (tests/ton_devnet, `make ton-devnet`).
- `api_key`: toncenter's key, sent as `X-API-Key` (without one toncenter allows 1 request a second).
- `network`: `mainnet` (default: tonviewer's links) or `private` (a chain of your own, such as the tests'
  devnet: a transaction's link is its hash).
- `payout_limit`, `daily_limit`: the most one payout, and all payouts of a UTC day, may send, in TON.
Every mistake is refused with the key to fix; nothing is guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed

from chains.nodes import node_url, positive_decimal, raw_nodes, secret_text

CODE = "ton"
_KEYS = {"url", "api_key", "network", "payout_limit", "daily_limit"}
NETWORKS = ("mainnet", "private")
NANOTON = Decimal("0.000000001")


@dataclass(frozen=True)
class TonConfig:
    url: str
    api_key: str | None
    payout_limit: Decimal | None
    daily_limit: Decimal | None
    network: str = "mainnet"


@cache
def ton_config() -> TonConfig | None:
    """The `ton` entry, or None when CHAIN_NODES has none; ImproperlyConfigured for a bad one."""
    entry = raw_nodes().get(CODE)
    return None if entry is None else _parse(entry)


def _parse(entry: Any) -> TonConfig:
    where = f"CHAIN_NODES[{CODE!r}]"
    url = node_url(where, entry, _KEYS, url_form="toncenter API v2 base, http(s)://.../api/v2", needs="a url")
    if not url.rstrip("/").endswith("/api/v2"):
        raise ImproperlyConfigured(f"{where}.url is toncenter's API v2 base, ending in /api/v2")
    payout_limit = _optional(where, "payout_limit", entry.get("payout_limit"))
    daily_limit = _optional(where, "daily_limit", entry.get("daily_limit"))
    if payout_limit is not None and daily_limit is not None and payout_limit > daily_limit:
        raise ImproperlyConfigured(f"{where}.payout_limit is at most its daily_limit")
    network = entry.get("network", "mainnet")
    if network not in NETWORKS:
        raise ImproperlyConfigured(f"{where}.network is one of {', '.join(NETWORKS)}")
    return TonConfig(
        url=url.rstrip("/"),
        api_key=secret_text(where, "api_key", entry.get("api_key")),
        network=str(network),
        payout_limit=payout_limit,
        daily_limit=daily_limit,
    )


def _optional(where: str, key: str, value: Any) -> Decimal | None:
    if value is None:
        return None
    amount = positive_decimal(where, key, value, what='a positive amount of TON, e.g. "500"')
    if amount != amount.quantize(NANOTON):
        raise ImproperlyConfigured(f"{where}.{key} is TON to the nanoton (at most 9 decimal places)")
    return amount


def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting == "CHAIN_NODES":
        ton_config.cache_clear()


setting_changed.connect(_reset)

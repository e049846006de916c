"""The Solana code's entry of `CHAIN_NODES`, read and checked once.

    CHAIN_NODES='{"sol": {"url": "https://api.mainnet-beta.solana.com", "api_key": "...",
                          "payout_limit": "50", "daily_limit": "200", "priority_fee_cap": "0.001"}}'

- `url`: the node's JSON-RPC endpoint (Agave's, or a provider's; a provider that wants its key in the
  URL gets it there); `api_key`: sent as the `x-api-key` header (chains.solana.node), when the provider
  takes it so.
- `network`: `mainnet` (the default), `devnet` or `testnet` (the public explorer's cluster), or `private`
  (a local validator: the explorer link is the signature itself).
- `payout_limit`, `daily_limit`: the most SOL one payout, and all payouts of a UTC day, may send.
- `priority_fee_cap`: the most SOL one transaction may pay in priority fee on top of the 5,000 lamports a
  signature (default 0.001 SOL, a million lamports): the compute-unit price times the limit may not pass
  it, whatever the recent fees say.
Amounts are SOL, to the lamport (at most 9 decimal places). Finality is the chain's (the finalized
commitment), not the asset's `confirmations`.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed

from chains.nodes import node_url, positive_decimal, raw_nodes, secret_text
from chains.solana.units import MAX_LAMPORTS, from_lamports, to_lamports
from core.assets import get_asset

NATIVE = "sol"
FAMILY = "sol"
DEFAULT_PRIORITY_FEE_CAP = "0.001"
NETWORKS = ("mainnet", "devnet", "testnet", "private")
_KEYS = {"url", "api_key", "network", "payout_limit", "daily_limit", "priority_fee_cap"}


@dataclass(frozen=True)
class SolanaConfig:
    code: str
    url: str
    api_key: str | None
    network: str
    payout_limit: Decimal | None  # SOL
    daily_limit: Decimal | None  # SOL
    priority_fee_cap: Decimal  # SOL

    @property
    def priority_fee_cap_lamports(self) -> int:
        return to_lamports(self.priority_fee_cap)


def solana_config(code: str = NATIVE) -> SolanaConfig:
    configs = solana_configs()
    if code not in configs:
        raise ImproperlyConfigured(f"CHAIN_NODES has no Solana node for {code}")
    return configs[code]


@cache
def solana_configs() -> dict[str, SolanaConfig]:
    """Every Solana code's node; raises ImproperlyConfigured on the first bad entry."""
    return {
        code: _parse(code, entry)
        for code, entry in raw_nodes().items()
        if isinstance(code, str) and get_asset(code).family == FAMILY
    }


def _parse(code: str, entry: Any) -> SolanaConfig:
    where = f"CHAIN_NODES[{code!r}]"
    if code != NATIVE:
        raise ImproperlyConfigured(f"{where}: Solana is served for sol only (no SPL token yet)")
    url = node_url(where, entry, _KEYS, url_form="http(s):// JSON-RPC address", needs="a url")
    return SolanaConfig(
        code=code,
        url=url,
        api_key=secret_text(where, "api_key", entry.get("api_key")),
        network=_network(where, entry.get("network", "mainnet")),
        payout_limit=_optional(where, "payout_limit", entry.get("payout_limit")),
        daily_limit=_optional(where, "daily_limit", entry.get("daily_limit")),
        priority_fee_cap=_sol(
            where, "priority_fee_cap", entry.get("priority_fee_cap", DEFAULT_PRIORITY_FEE_CAP)
        ),
    )


def _network(where: str, value: Any) -> str:
    if value not in NETWORKS:
        raise ImproperlyConfigured(f"{where}.network is one of {', '.join(NETWORKS)}")
    return str(value)


def _sol(where: str, key: str, value: Any) -> Decimal:
    amount = positive_decimal(where, key, value, what='a positive amount of SOL, e.g. "0.5"')
    if amount > from_lamports(MAX_LAMPORTS):
        raise ImproperlyConfigured(f"{where}.{key} is more SOL than there can be")
    if amount != amount.quantize(Decimal("0.000000001")):
        raise ImproperlyConfigured(f"{where}.{key} is SOL to the lamport (at most 9 decimal places)")
    return amount


def _optional(where: str, key: str, value: Any) -> Decimal | None:
    return None if value is None else _sol(where, key, value)


def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting in ("CHAIN_NODES", "CHAIN_BACKENDS"):
        solana_configs.cache_clear()


setting_changed.connect(_reset)

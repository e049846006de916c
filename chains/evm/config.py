"""The EVM codes' entries of `CHAIN_NODES`, read and checked once.

    CHAIN_BACKENDS='{"eth": "evm", "usdterc20": "evm"}'
    CHAIN_NODES='{"eth": {"url": "http://127.0.0.1:8545", "chain_id": 31337},
                  "usdterc20": {"url": "http://127.0.0.1:8545", "chain_id": 31337,
                                "contract": "0x5FbDB2315678afecb367f032d93F642f64180aa3", "decimals": 6}}'

- `url`: the node's JSON-RPC address (http or https; credentials in it are never logged).
- `chain_id`: the chain the node must be on (checked against `eth_chainId`; a signed transaction names it).
- `contract` and `decimals`: an ERC-20 token's contract and its decimals; absent for the chain's native
  coin (eth, bnb). Codes with the same `chain_id` share one scanner and one cursor.
- `fee_cap_gwei`: the highest `maxFeePerGas` Kassa offers (default 200); above it payouts and sweeps wait.
- `priority_fee_gwei`: the tip offered; default: what the node suggests (`eth_maxPriorityFeePerGas`).
- `sweep_min`: the least a deposit address must hold of this code before it is swept to the hot address
  (in the coin; default: the asset's minimum withdrawal).
- `topup_cap`: the most native coin one gas top-up may send (default 0.01).
- `topup_daily_limit`: the most native coin the gas top-ups of this code may send in a UTC day (default
  20 x `topup_cap`, so 0.2; at least `topup_cap`); the signer refuses more (its journal counts them).
- `payout_limit`, `daily_limit`: the most one payout, and all payouts of a UTC day, may send of this code
  (in the coin); the signer refuses more. Unset: no limit.
- `confirmations` is the asset's, as everywhere (ASSET_OVERRIDES).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed

from chains.nodes import node_url, positive_decimal
from core.assets import get_asset

GWEI = Decimal(10) ** 9
_KEYS = {
    "url",
    "chain_id",
    "contract",
    "decimals",
    "fee_cap_gwei",
    "priority_fee_gwei",
    "sweep_min",
    "topup_cap",
    "topup_daily_limit",
    "payout_limit",
    "daily_limit",
}
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")


@dataclass(frozen=True)
class EvmConfig:
    code: str
    url: str
    chain_id: int
    contract: str | None  # lowercase 0x...; None: the native coin
    decimals: int  # of the chain's unit (18 native, the token's own otherwise)
    fee_cap_wei: int
    priority_fee_wei: int | None
    sweep_min: Decimal
    topup_cap: Decimal
    topup_daily_limit: Decimal
    payout_limit: Decimal | None
    daily_limit: Decimal | None

    @property
    def chain(self) -> str:
        """The scanner's key: the codes of one chain share it (and one cursor)."""
        return f"evm:{self.chain_id}"


def evm_config(code: str) -> EvmConfig:
    configs = evm_configs()
    if code not in configs:
        raise ImproperlyConfigured(f"CHAIN_NODES has no EVM node for {code}")
    return configs[code]


@cache
def evm_configs() -> dict[str, EvmConfig]:
    """Every EVM code's node; raises ImproperlyConfigured on the first bad entry."""
    raw = settings.CHAIN_NODES or {}
    if not isinstance(raw, dict):
        raise ImproperlyConfigured("CHAIN_NODES is a JSON object: payment code -> node")
    configs = {
        code: _parse(code, entry)
        for code, entry in raw.items()
        if isinstance(code, str) and get_asset(code).family == "evm"
    }
    chains: dict[int, tuple[str, str]] = {}
    for config in configs.values():
        seen = chains.setdefault(config.chain_id, (config.code, config.url))
        if seen[1] != config.url:
            raise ImproperlyConfigured(
                f"CHAIN_NODES: {seen[0]} and {config.code} are on chain {config.chain_id} but name different "
                "urls; codes of one chain share one node"
            )
    natives: dict[int, str] = {}
    for config in configs.values():
        if config.contract is None and natives.setdefault(config.chain_id, config.code) != config.code:
            raise ImproperlyConfigured(
                f"CHAIN_NODES: {natives[config.chain_id]} and {config.code} are both the native coin of "
                f"chain {config.chain_id}; a token names its contract"
            )
    return configs


def chain_codes(chain: str) -> list[str]:
    """The configured codes on one chain, the native coin first."""
    found = [config for config in evm_configs().values() if config.chain == chain]
    return [config.code for config in sorted(found, key=lambda c: (c.contract is not None, c.code))]


def _parse(code: str, entry: Any) -> EvmConfig:
    where = f"CHAIN_NODES[{code!r}]"
    url = node_url(where, entry, _KEYS, url_form="http(s):// JSON-RPC address", needs="a url and a chain_id")
    chain_id = _whole(where, "chain_id", entry.get("chain_id"), low=1)
    asset = get_asset(code)
    native = code in ("eth", "bnb")
    contract = entry.get("contract")
    if native:
        if contract is not None or "decimals" in entry:
            raise ImproperlyConfigured(f"{where}: {code} is a native coin; it has no contract or decimals")
        decimals = 18
    else:
        if not isinstance(contract, str) or not _ADDRESS.fullmatch(contract):
            raise ImproperlyConfigured(f"{where}.contract is the token's 0x... contract address")
        contract = contract.lower()
        decimals = _whole(where, "decimals", entry.get("decimals"), low=asset.chain_decimals, high=36)
    topup_cap = _amount(where, "topup_cap", entry.get("topup_cap", "0.01"))
    topup_daily_limit = _amount(where, "topup_daily_limit", entry.get("topup_daily_limit", 20 * topup_cap))
    if topup_daily_limit < topup_cap:
        raise ImproperlyConfigured(f"{where}.topup_daily_limit is at least topup_cap ({topup_cap})")
    return EvmConfig(
        code=code,
        url=url,
        chain_id=chain_id,
        contract=contract,
        decimals=decimals,
        fee_cap_wei=int(_amount(where, "fee_cap_gwei", entry.get("fee_cap_gwei", "200")) * GWEI),
        priority_fee_wei=(
            None
            if entry.get("priority_fee_gwei") is None
            else int(_amount(where, "priority_fee_gwei", entry["priority_fee_gwei"]) * GWEI)
        ),
        sweep_min=_amount(where, "sweep_min", entry.get("sweep_min", asset.min_withdrawal)),
        topup_cap=topup_cap,
        topup_daily_limit=topup_daily_limit,
        payout_limit=_optional(where, "payout_limit", entry.get("payout_limit")),
        daily_limit=_optional(where, "daily_limit", entry.get("daily_limit")),
    )


def _whole(where: str, key: str, value: Any, *, low: int, high: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low or (high and value > high):
        bound = f"from {low} to {high}" if high else f"of at least {low}"
        raise ImproperlyConfigured(f"{where}.{key} is a whole number {bound}")
    return value


def _amount(where: str, key: str, value: Any) -> Decimal:
    return positive_decimal(where, key, value, what='a positive amount, e.g. "0.01"')


def _optional(where: str, key: str, value: Any) -> Decimal | None:
    return None if value is None else _amount(where, key, value)


def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting in ("CHAIN_NODES", "CHAIN_BACKENDS"):
        evm_configs.cache_clear()


setting_changed.connect(_reset)

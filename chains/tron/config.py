"""The TRON codes' entries of `CHAIN_NODES`, read and checked once.

    CHAIN_BACKENDS='{"trx": "tron", "trc20usdt": "tron"}'
    CHAIN_NODES='{"trx": {"url": "http://127.0.0.1:8090"},
                  "trc20usdt": {"url": "http://127.0.0.1:8090",
                                "contract": "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", "decimals": 6,
                                "energy": "delegate", "resource_address": "T..."}}'

- `url`: the java-tron node's HTTP API (or TronGrid's); `solidity_url`: where it serves `walletsolidity/`
  when not at `url` (a full node serves it on its own port, 8091 by default); `api_key`: TronGrid's key,
  sent as `TRON-PRO-API-KEY`; `network`: mainnet (the default), nile or shasta (their tronscan), or
  private (no public explorer). The TRON codes are one chain: these four are the same in every entry.
- `contract` and `decimals`: a TRC-20 token's contract (T...) and its decimals; absent for trx.
- `sweep_min`: the least a deposit address must hold of this code before it is swept (default: the
  asset's minimum withdrawal).
- `fee_limit_cap` (tokens): the most TRX one contract call may burn (its `fee_limit`; default 100).
- `energy` (tokens): how a call from a deposit address gets its energy: "burn" (the default: TRX sent to
  it is burnt) or "delegate" (staked energy delegated from `resource_address`, then taken back). The
  resource address is an account of the seed, so that the signer can sign its delegations: the hot
  address (m/44'/195'/0'/1/0) or the seed's resource account (m/44'/195'/0'/1/1).
- `payout_limit`, `daily_limit`: the most one payout, and all payouts of a UTC day, may send of this code.
- `CHAIN_XPUBS["tron"]`: the account key (m/44'/195'/0') deposit addresses are derived from.
Finality is the chain's (the solidified block), not the asset's `confirmations`.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed

from chains.nodes import node_url, positive_decimal, raw_nodes, secret_text
from chains.tron import address
from core.assets import get_asset
from core.offer import on_sandbox_backend

NATIVE = "trx"
NETWORKS = ("mainnet", "nile", "shasta", "private")
ENERGY_MODES = ("burn", "delegate")
RESOURCE_INDEXES = (0, 1)  # the hot address, the resource account: m/44'/195'/0'/1/<i>
NODE_KEYS = ("url", "solidity_url", "api_key", "network")  # one chain, one node: equal in every entry
TOKEN_KEYS = {"contract", "decimals", "fee_limit_cap", "energy", "resource_address"}
_KEYS = {*NODE_KEYS, *TOKEN_KEYS, "sweep_min", "payout_limit", "daily_limit"}


@dataclass(frozen=True)
class TronConfig:
    code: str
    url: str
    solidity_url: str | None
    api_key: str | None
    network: str
    contract: str | None  # T... of the token; None: trx
    decimals: int
    sweep_min: Decimal
    fee_limit_cap: Decimal  # TRX
    energy: str  # "burn" or "delegate"
    resource_address: str | None
    resource_index: int | None  # m/44'/195'/0'/1/<i> of resource_address
    payout_limit: Decimal | None
    daily_limit: Decimal | None


def tron_config(code: str) -> TronConfig:
    configs = tron_configs()
    if code not in configs:
        raise ImproperlyConfigured(f"CHAIN_NODES has no TRON node for {code}")
    return configs[code]


@cache
def tron_configs() -> dict[str, TronConfig]:
    """Every TRON code's node; raises ImproperlyConfigured on the first bad entry."""
    configs = {
        code: _parse(code, entry)
        for code, entry in raw_nodes().items()
        if isinstance(code, str) and get_asset(code).family == "tron"
    }
    first: TronConfig | None = None
    contracts: dict[str, str] = {}
    for config in configs.values():
        first = first or config
        for key in NODE_KEYS:
            if getattr(config, key) != getattr(first, key):
                raise ImproperlyConfigured(
                    f"CHAIN_NODES: {first.code} and {config.code} name different {key}s; the TRON codes are "
                    "one chain and share one node"
                )
        if config.contract and contracts.setdefault(config.contract, config.code) != config.code:
            raise ImproperlyConfigured(
                f"CHAIN_NODES: {contracts[config.contract]} and {config.code} name the same contract"
            )
    return configs


def scanned_codes() -> list[str]:
    """The TRON codes on a real backend with a node, trx first: one scan, one cursor."""
    codes = [code for code in tron_configs() if not on_sandbox_backend(code)]
    return sorted(codes, key=lambda code: (code != NATIVE, code))


def _parse(code: str, entry: Any) -> TronConfig:
    where = f"CHAIN_NODES[{code!r}]"
    url = node_url(where, entry, _KEYS, url_form="http(s):// HTTP API address", needs="a url")
    asset = get_asset(code)
    native = code == NATIVE
    if native:
        wrong = sorted(TOKEN_KEYS & set(entry))
        if wrong:
            raise ImproperlyConfigured(
                f"{where}.{wrong[0]}: trx is the chain's coin (no contract, decimals 6, no energy); "
                "token keys belong on the token's entry"
            )
        contract, decimals = None, 6
    else:
        contract = _address(where, "contract", entry.get("contract"), "the token's T... contract address")
        decimals = entry.get("decimals")
        if (
            not isinstance(decimals, int)
            or isinstance(decimals, bool)
            or not asset.chain_decimals <= decimals <= 36
        ):
            raise ImproperlyConfigured(
                f"{where}.decimals is a whole number from {asset.chain_decimals} to 36"
            )
    energy = entry.get("energy", "burn")
    if energy not in ENERGY_MODES:
        raise ImproperlyConfigured(f"{where}.energy is one of {', '.join(ENERGY_MODES)}")
    resource = entry.get("resource_address")
    if energy == "delegate":
        resource = _address(
            where, "resource_address", resource, "the T... address whose staked energy is lent"
        )
    elif resource is not None:
        raise ImproperlyConfigured(f'{where}.resource_address is used only with "energy": "delegate"')
    resource_index = None if resource is None else _resource_index(where, resource)
    network = entry.get("network", "mainnet")
    if network not in NETWORKS:
        raise ImproperlyConfigured(f"{where}.network is one of {', '.join(NETWORKS)}")
    return TronConfig(
        code=code,
        url=url,
        solidity_url=_optional_url(where, "solidity_url", entry.get("solidity_url")),
        api_key=secret_text(where, "api_key", entry.get("api_key")),
        network=network,
        contract=contract,
        decimals=decimals,
        sweep_min=_amount(where, "sweep_min", entry.get("sweep_min", asset.min_withdrawal)),
        fee_limit_cap=_sun(where, "fee_limit_cap", entry.get("fee_limit_cap", "100")),
        energy=energy,
        resource_address=resource,
        resource_index=resource_index,
        payout_limit=_optional(where, "payout_limit", entry.get("payout_limit")),
        daily_limit=_optional(where, "daily_limit", entry.get("daily_limit")),
    )


def _address(where: str, key: str, value: Any, what: str) -> str:
    try:
        return address.validate(value)
    except address.InvalidTronAddress as exc:
        raise ImproperlyConfigured(f"{where}.{key} is {what}: {exc}") from None


def _resource_index(where: str, resource: str) -> int:
    """The index on the seed's internal chain of the account whose stake lends energy: its key must be the
    signer's, or no delegation could ever be signed."""
    from chains.derivation import derive_internal_address

    accounts = {index: derive_internal_address("tron", index) for index in RESOURCE_INDEXES}
    for index, account in accounts.items():
        if account == resource:
            return index
    raise ImproperlyConfigured(
        f"{where}.resource_address is an account whose key the signer holds: the hot address "
        f"{accounts[0]} (m/44'/195'/0'/1/0) or the resource account {accounts[1]} (m/44'/195'/0'/1/1) "
        'of CHAIN_XPUBS["tron"]; stake TRX for energy on it'
    )


def _optional_url(where: str, key: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise ImproperlyConfigured(f"{where}.{key} is an http(s):// address")
    return value


def _amount(where: str, key: str, value: Any) -> Decimal:
    return positive_decimal(where, key, value, what='a positive amount, e.g. "10"')


def _sun(where: str, key: str, value: Any) -> Decimal:
    amount = _amount(where, key, value)
    if amount != amount.quantize(Decimal("0.000001")):
        raise ImproperlyConfigured(f"{where}.{key} is TRX to the sun (at most 6 decimal places)")
    return amount


def _optional(where: str, key: str, value: Any) -> Decimal | None:
    return None if value is None else _amount(where, key, value)


def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting in ("CHAIN_NODES", "CHAIN_BACKENDS", "CHAIN_XPUBS"):
        tron_configs.cache_clear()


setting_changed.connect(_reset)

"""The `near` entry of `CHAIN_NODES` and the hot key of `CHAIN_XPUBS`, read and checked once.

    CHAIN_BACKENDS='{"near": "near"}'
    CHAIN_XPUBS='{"near": "<64 hex: the hot key's ed25519 public key>", ...}'
    CHAIN_NODES='{"near": {"url": "https://rpc.mainnet.near.org", "account": "shop.near",
                           "payout_limit": "500", "daily_limit": "2000"}}'

- `url`: the node's JSON-RPC endpoint (a node you run, or a provider's; a provider that wants its key in
  the URL gets it there); `api_key`: sent as the `x-api-key` header when given.
- `network`: `mainnet` (the default) or `testnet` (their nearblocks explorer), or `private` (a local node
  or the test stub: the explorer link is the hash itself).
- `account`: the hot account, which receives the sweeps and pays the withdrawals: a named account (e.g.
  `shop.near`) to which you added the hot key as a full-access key, or by default the implicit account of
  the hot key itself (its 64 hex characters).
- `sweep_min`: the least a deposit account must hold before it is swept into the hot account (default
  0.01 NEAR: a sweep costs about 0.0003 NEAR).
- `payout_limit`, `daily_limit`: the most NEAR one payout, and all payouts of a UTC day, may send.
- `CHAIN_XPUBS["near"]`: the hot key's public key (SLIP-10 m/44'/397'/0' of the signer's seed), as 64 hex
  characters or `ed25519:<base58>` (`python -m chains.seed_keys` prints it). Deposit accounts are not
  derived from it (ed25519 has no public derivation): the signer exports the public keys of its key pool.
  An extended key there is the sandbox's (it derives simulated deposit addresses from it) and is refused
  on the near backend.
Amounts are NEAR to 18 places (Kassa's amounts; a chain amount finer than that is rounded down when read).
Finality is the chain's (`final` blocks), not the asset's `confirmations`.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed

from chains.near import transaction
from chains.near.keys import development_hot_public_key
from chains.nodes import node_url, positive_decimal, raw_nodes, secret_text
from core.assets import get_asset

NATIVE = "near"
FAMILY = "near"
NETWORKS = ("mainnet", "testnet", "private")
DEFAULT_SWEEP_MIN = "0.01"
_KEYS = {"url", "api_key", "network", "account", "sweep_min", "payout_limit", "daily_limit"}
_WHERE_KEY = 'CHAIN_XPUBS["near"]'


@dataclass(frozen=True)
class NearConfig:
    code: str
    url: str
    api_key: str | None
    network: str
    account: str  # the hot account
    hot_key: bytes  # its full-access key: the signer's m/44'/397'/0'
    sweep_min: Decimal
    payout_limit: Decimal | None
    daily_limit: Decimal | None


def near_config(code: str = NATIVE) -> NearConfig:
    configs = near_configs()
    if code not in configs:
        raise ImproperlyConfigured(f"CHAIN_NODES has no NEAR node for {code}")
    return configs[code]


@cache
def near_configs() -> dict[str, NearConfig]:
    """Every NEAR code's node; raises ImproperlyConfigured on the first bad entry."""
    return {
        code: _parse(code, entry)
        for code, entry in raw_nodes().items()
        if isinstance(code, str) and get_asset(code).family == FAMILY
    }


def hot_public_key() -> bytes:
    """The configured hot key, or the public development key when none is configured."""
    configured = (settings.CHAIN_XPUBS or {}).get(FAMILY)
    if configured in (None, ""):
        return development_hot_public_key()
    return public_key(configured)


def has_key_configured() -> bool:
    """CHAIN_XPUBS["near"] is a public key the near backend reads (not the sandbox's extended key)."""
    configured = (settings.CHAIN_XPUBS or {}).get(FAMILY)
    try:
        return configured not in (None, "") and bool(public_key(configured))
    except ImproperlyConfigured:
        return False


def uses_development_key() -> bool:
    return hot_public_key() == development_hot_public_key()


def public_key(text: object) -> bytes:
    """`text` as an ed25519 public key (64 hex or ed25519:<base58>); ImproperlyConfigured naming the key."""
    if not isinstance(text, str):
        raise ImproperlyConfigured(f"{_WHERE_KEY} must be a string: the hot key's public key.")
    text = text.strip()
    if text.startswith("xpub"):
        raise ImproperlyConfigured(
            f"{_WHERE_KEY} is an extended key, which only the sandbox derives from: on the near backend it "
            "is the hot key's ed25519 public key, 64 hex characters (python -m chains.seed_keys prints it)."
        )
    try:
        if text.startswith("ed25519:"):
            return transaction.parse_public_key(text)
        if len(text) == 64 and transaction.is_implicit(text.lower()):
            return bytes.fromhex(text)
    except ValueError:
        pass
    # Never echoed: a pasted private key must not reach logs or error reports.
    raise ImproperlyConfigured(
        f"{_WHERE_KEY} is not an ed25519 public key (64 hex characters or ed25519:<base58>). If a "
        "private key was pasted here, treat it as leaked."
    )


def _parse(code: str, entry: Any) -> NearConfig:
    where = f"CHAIN_NODES[{code!r}]"
    if code != NATIVE:
        raise ImproperlyConfigured(f"{where}: NEAR is served for near only (no NEP-141 token yet)")
    url = node_url(where, entry, _KEYS, url_form="http(s):// JSON-RPC address", needs="a url")
    network = entry.get("network", "mainnet")
    if network not in NETWORKS:
        raise ImproperlyConfigured(f"{where}.network is one of {', '.join(NETWORKS)}")
    hot_key = hot_public_key()
    account = entry.get("account", transaction.implicit_account(hot_key))
    if not isinstance(account, str) or not transaction.is_account_id(account):
        raise ImproperlyConfigured(
            f"{where}.account is a NEAR account id (e.g. shop.near, or the 64 hex characters of an "
            "implicit account)"
        )
    if transaction.is_implicit(account) and account != transaction.implicit_account(hot_key):
        raise ImproperlyConfigured(
            f"{where}.account is an implicit account whose key is not {_WHERE_KEY}: the signer could not pay "
            "from it. Use the hot key's own implicit account, or a named account holding that key."
        )
    return NearConfig(
        code=code,
        url=url,
        api_key=secret_text(where, "api_key", entry.get("api_key")),
        network=network,
        account=account,
        hot_key=hot_key,
        sweep_min=_near(where, "sweep_min", entry.get("sweep_min", DEFAULT_SWEEP_MIN)),
        payout_limit=_optional(where, "payout_limit", entry.get("payout_limit")),
        daily_limit=_optional(where, "daily_limit", entry.get("daily_limit")),
    )


def _near(where: str, key: str, value: Any) -> Decimal:
    amount = positive_decimal(where, key, value, what='a positive amount of NEAR, e.g. "10"')
    if amount != amount.quantize(Decimal(1).scaleb(-get_asset(NATIVE).amount_decimals)):
        raise ImproperlyConfigured(f"{where}.{key} is NEAR to at most 18 decimal places")
    return amount


def _optional(where: str, key: str, value: Any) -> Decimal | None:
    return None if value is None else _near(where, key, value)


def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting in ("CHAIN_NODES", "CHAIN_BACKENDS", "CHAIN_XPUBS"):
        near_configs.cache_clear()


setting_changed.connect(_reset)

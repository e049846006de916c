"""`CHAIN_NODES`: the node behind each payment code on a real backend, as each backend's package reads it
(chains.bitcoincore.config, chains.evm.config), and what they share: the entry's url, amounts, and the
network a code's addresses and keys belong to.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

NETWORKS = ("mainnet", "testnet", "regtest")


def network(code: str) -> str:
    """The network a code's addresses and keys belong to: its node's, mainnet when it has no node."""
    entry = raw_nodes().get(code)
    return "mainnet" if entry is None else str(entry.get("network", "mainnet"))


def raw_nodes() -> dict[str, Any]:
    raw = settings.CHAIN_NODES or {}
    if not isinstance(raw, dict):
        raise ImproperlyConfigured("CHAIN_NODES is a JSON object: payment code -> node")
    return raw


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


def secret_text(where: str, key: str, value: Any) -> str | None:
    """An optional secret of a CHAIN_NODES entry (a provider's API key), stripped; refused when it is not
    text, and never echoed in the refusal."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ImproperlyConfigured(f"{where}.{key} is text")
    return value.strip()

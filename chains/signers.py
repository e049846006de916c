"""The signer process's one seed, signing for every asset family that has a signer: the one place they are
listed (`SEED_SIGNERS`, family -> the function opening that family's signer of a seed with its journal).

A request goes to the signer of its code's family. A family whose key is configured in CHAIN_XPUBS must
be the seed's (else the process refuses to start: it could not pay or sweep the addresses Kassa hands
out); a family left on the development key is served only by the development seed, and so is one whose
CHAIN_XPUBS entry is not of the form its signer's backend reads (`has_key_configured()` False: sol's
extended key, which only the sandbox derives from); a seed that serves no family at all is refused.
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from chains.base import PayoutRefused, SignedTx, UnsignedTx
from chains.derivation import uses_development_key
from core.assets import get_asset
from core.errors import UnsupportedAsset

SEED_SIGNERS = {
    "evm": "chains.evm.signer.seed_signer",
    "tron": "chains.tron.signer.seed_signer",
    "ton": "chains.ton.signer.seed_signer",
    "sol": "chains.solana.signer.seed_signer",
    "near": "chains.near.signer.seed_signer",
}


class SeedMismatch(ValueError):
    """The seed is not the one behind the configured keys."""


class SeedSigner:
    """Every family's signer of one seed (`signers`: family -> its signer), journals at `journal`."""

    def __init__(self, mnemonic: str, journal: str = ":memory:") -> None:
        self.signers: dict[str, Any] = {}
        wrong, unserved = [], []
        for family, path in SEED_SIGNERS.items():
            signer = import_string(path)(mnemonic, journal)
            if signer.matches_configuration():
                self.signers[family] = signer
            elif _unkeyed(family, signer):
                unserved.append(family)
            else:
                wrong.append(family)
        if wrong or not self.signers:
            named = " nor ".join(f"CHAIN_XPUBS[{family!r}]" for family in wrong or unserved)
            raise SeedMismatch(
                f"this seed is not the one behind {named}: its addresses differ from the deposit and hot "
                "addresses Kassa hands out, so it could not sweep or pay them"
            )

    def hot_addresses(self) -> dict[str, str]:
        return {family: signer.hot_address() for family, signer in self.signers.items()}

    def sign(self, tx: UnsignedTx) -> SignedTx:
        try:
            family = get_asset(tx.code).family
        except UnsupportedAsset:
            raise PayoutRefused(f"{tx.code!r} is not a payment code") from None
        signer = self.signers.get(family)
        if signer is None:
            raise PayoutRefused(f"this signer signs no {family} transaction (its seed is not that key's)")
        return signer.sign(tx)  # type: ignore[no-any-return]

    def public_keys(self, code: str, start: int, count: int) -> list[str]:
        """The public keys of the code's family's deposit keys start .. start+count-1, where the family's
        signer exports them (NEAR's key pool: ed25519 has no public derivation); refused for the others."""
        try:
            family = get_asset(code).family
        except UnsupportedAsset:
            raise PayoutRefused(f"{code!r} is not a payment code") from None
        signer = self.signers.get(family)
        if signer is None or not hasattr(signer, "public_keys"):
            raise PayoutRefused(f"this signer exports no {family} public keys")
        return signer.public_keys(code, start, count)  # type: ignore[no-any-return]


def _unkeyed(family: str, signer: Any) -> bool:
    """No key of the family's own is configured for this seed to match: the development key, or (Solana) the
    sandbox's extended key, which no payout leaves from. A family whose key is not where chains.derivation
    looks (TON's, Solana's) says so itself."""
    development = getattr(signer, "uses_development_key", None)
    if development() if development is not None else uses_development_key(family):
        return True
    return not getattr(signer, "has_key_configured", lambda: True)()


def signer_location() -> str | None:
    """Where payouts are signed, from `EVM_SIGNER`: the socket path of the signer process ("unix:<path>"),
    or None for the in-process development signer ("local"); anything else is refused."""
    where = str(settings.EVM_SIGNER or "")
    if where == "local":
        return None
    if where.startswith("unix:"):
        return where.removeprefix("unix:")
    raise ImproperlyConfigured('EVM_SIGNER is "unix:/path/to/signer.sock" (or "local" in development)')


def open_journal(path: str, schema: str) -> sqlite3.Connection:
    """A signer journal's SQLite file (mode 0600: the signer's user only; ":memory:" in tests), with the
    table of `schema` (a CREATE TABLE IF NOT EXISTS statement)."""
    if path != ":memory:":
        os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
        os.chmod(path, 0o600)
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    db.execute(schema)
    return db

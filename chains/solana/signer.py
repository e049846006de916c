"""The Solana signer: the seed's SLIP-10 ed25519 key m/44'/501'/0'/0' (the hot address, which receives
every deposit and pays every payout) signs, in the signer process (`manage.py run_signer`, beside the EVM
and TRON keys of the same seed) or in-process in development, only what chains.solana.policy approves
after reading the message's bytes itself.

The signature covers the message bytes the signer read; the signed transaction comes back as its wire
bytes in base64 with the blockhash's `last_valid_block_height` (JSON, `stored`), which is what is stored
and re-sent. Its txid is its signature (ed25519 is deterministic: the same message, the same txid).

A withdrawal is signed as one transaction: the same message again, or another only once the first can
never land: the node's finalized block height is past the first's last valid block height and the node
does not know its signature (asked in that order: a finalized height never comes back below it). The
last valid height the journal keeps is its own bound, never only the request's word: the larger of the
request's and the node's processed block height now plus MAX_PROCESSING_AGE (no blockhash the node has
seen can outlive that). The backend closes an expired payout only SIGNER_MARGIN_BLOCKS after the
request's height, so that the signer agrees by then.

Web and workers reach the signer process through the same socket as the EVM signer (`EVM_SIGNER`);
`EVM_SIGNER=local` signs in-process with the public development seed. The limits of each code
(`SolanaRules`) come from its `CHAIN_NODES` entry (`priority_fee_cap`, `payout_limit`, `daily_limit`).
"""

from __future__ import annotations

import base64
import json
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache
from typing import Protocol

from bip_utils import Bip32Slip10Ed25519, Bip39SeedGenerator
from django.core.exceptions import ImproperlyConfigured
from solders.keypair import Keypair
from solders.transaction import Transaction

from chains.base import SignedTx, UnsignedTx
from chains.derivation import DEVELOPMENT_MNEMONIC
from chains.evm.signer import SocketSigner
from chains.signers import open_journal, signer_location
from chains.solana import keys
from chains.solana.config import solana_config
from chains.solana.node import SolanaNode
from chains.solana.policy import LAMPORTS_PER_SIGNATURE, Approved, SignRefused, SolanaRules, check
from chains.solana.units import from_lamports
from core.money import number_text

logger = logging.getLogger(__name__)

ACCOUNT_PATH = keys.DEVELOPMENT_PATH  # m/44'/501'/0'/0': what Phantom and Solflare derive first
MAX_PROCESSING_AGE = 150  # a blockhash is valid up to its block's height + 150
# How far past the request's last valid block height the backend waits before it rebuilds: the gap
# between the confirmed blockhash the builder took and the processed height the signer reads.
SIGNER_MARGIN_BLOCKS = 32


class ChainView(Protocol):
    """What the journal asks the code's node (the signer process's own connection to it)."""

    def block_height(self, code: str, commitment: str) -> int: ...

    def known(self, code: str, txid: str) -> bool: ...


class NodeView:
    """ChainView over the code's configured node."""

    def __init__(self) -> None:
        self._nodes: dict[str, SolanaNode] = {}

    def _node(self, code: str) -> SolanaNode:
        if code not in self._nodes:
            config = solana_config(code)
            self._nodes[code] = SolanaNode(config.url, api_key=config.api_key)
        return self._nodes[code]

    def block_height(self, code: str, commitment: str) -> int:
        return self._node(code).block_height(commitment)

    def known(self, code: str, txid: str) -> bool:
        return self._node(code).signature_statuses([txid], search_history=True)[0] is not None


def configured_rules(code: str) -> SolanaRules:
    """The Solana signing rules of `code` from its `CHAIN_NODES` entry; a code with no Solana node has none,
    and every request of it is refused."""
    try:
        config = solana_config(code)
    except ImproperlyConfigured as exc:
        raise SignRefused(f"no Solana signing rules for {code}: {exc}") from None
    return SolanaRules(
        code=code,
        priority_fee_cap=config.priority_fee_cap_lamports,
        payout_limit=config.payout_limit,
        daily_limit=config.daily_limit,
    )


class SolanaJournal:
    """What the Solana signer has signed, in its own file (beside the other families' journals, or the
    same file): the web and the workers can write the database, not this. Per code and UTC day, the
    payouts stay within `daily_limit` (each withdrawal counted once, at the most any of its signatures
    moves)."""

    def __init__(self, path: str = ":memory:") -> None:
        self._db = open_journal(
            path,
            "CREATE TABLE IF NOT EXISTS sol_signed (txid TEXT PRIMARY KEY, ref TEXT NOT NULL,"
            " code TEXT NOT NULL, amount TEXT NOT NULL, day TEXT NOT NULL, valid_until INTEGER NOT NULL)",
        )
        self.lock = threading.Lock()

    def admit(self, approved: Approved, txid: str, chain: ChainView) -> None:
        """Refuse what the journal forbids (call under `lock`, then `record` what was signed)."""
        signed_for = self._signed_for(txid)
        if signed_for == approved.ref:
            return  # this very message: the same signature, nothing more can move
        if signed_for is not None:
            raise SignRefused(f"this very transaction was signed as the payout of {signed_for} already")
        earlier = self._db.execute(
            "SELECT txid, valid_until FROM sol_signed WHERE ref = ? AND code = ?",
            (approved.ref, approved.code),
        ).fetchall()
        for other, valid_until in earlier:
            try:
                height = chain.block_height(approved.code, "finalized")
                if height <= valid_until:
                    raise SignRefused(
                        f"{approved.ref} was signed already as {other}, which may land until block height "
                        f"{valid_until} (finalized now: {height}): only that transaction is sent again"
                    )
                landed = chain.known(approved.code, other)  # asked after the height: it cannot land later
            except SignRefused:
                raise
            except Exception:
                logger.warning("solana signer: the node could not tell whether %s may land; refused", other)
                raise SignRefused(
                    f"{approved.ref} was signed already as {other}, and the node cannot say now whether it "
                    "may still land"
                ) from None
            if landed:
                raise SignRefused(f"{approved.ref} was signed already as {other}, which the node knows")
        self._within_daily_limit(approved)

    def _within_daily_limit(self, approved: Approved) -> None:
        more = approved.amount - self._most(approved.ref, approved.code)
        if approved.daily_limit is None or more <= 0:
            return
        refs = self._db.execute(
            "SELECT DISTINCT ref FROM sol_signed WHERE code = ? AND day = ?", (approved.code, _today())
        ).fetchall()
        total = sum((self._most(ref, approved.code) for (ref,) in refs), more)
        if total > approved.daily_limit:
            raise SignRefused(
                f"{number_text(total)} {approved.code} today is over the daily limit "
                f"{number_text(approved.daily_limit)} of {approved.code}"
            )

    def record(self, approved: Approved, txid: str, valid_until: int) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO sol_signed (txid, ref, code, amount, day, valid_until)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (txid, approved.ref, approved.code, str(approved.amount), _today(), valid_until),
        )

    def _signed_for(self, txid: str) -> str | None:
        row = self._db.execute("SELECT ref FROM sol_signed WHERE txid = ?", (txid,)).fetchone()
        return None if row is None else str(row[0])

    def _most(self, ref: str, code: str) -> Decimal:
        """The most any signature of `ref` moves (at most one of them lands), exactly."""
        amounts = self._db.execute(
            "SELECT amount FROM sol_signed WHERE ref = ? AND code = ?", (ref, code)
        ).fetchall()
        return max((Decimal(amount) for (amount,) in amounts), default=Decimal(0))


def _today() -> str:
    return datetime.now(UTC).date().isoformat()


def stored(wire: bytes, last_valid_block_height: int) -> str:
    """What is stored and re-sent of a signed transaction (chains.solana.payouts reads it back)."""
    transaction = base64.b64encode(wire).decode()
    return json.dumps({"transaction": transaction, "last_valid_block_height": last_valid_block_height})


class SolanaSigner:
    """Signs Solana payouts with `mnemonic`'s m/44'/501'/0'/0' key after chains.solana.policy approves them
    against `rules(code)`, keeping what it signed in `journal` and asking `chain` what landed."""

    def __init__(
        self,
        mnemonic: str,
        journal: SolanaJournal | None = None,
        *,
        rules: Callable[[str], SolanaRules] = configured_rules,
        chain: ChainView | None = None,
    ) -> None:
        seed = Bip39SeedGenerator(mnemonic).Generate()
        secret = Bip32Slip10Ed25519.FromSeedAndPath(seed, ACCOUNT_PATH).PrivateKey().Raw().ToBytes()
        self._keypair = Keypair.from_seed(secret)
        self.journal = journal or SolanaJournal()
        self.rules = rules
        self.chain: ChainView = chain or NodeView()

    def hot_address(self) -> str:
        return str(self._keypair.pubkey())

    def matches_configuration(self) -> bool:
        """The seed's key is CHAIN_XPUBS["sol"] (the development key when none is configured)."""
        return self.has_key_configured() and self.hot_address() == keys.receiving_address()

    def has_key_configured(self) -> bool:
        """CHAIN_XPUBS["sol"] is a wallet's address, or unset (the development key), as the solana backend
        reads it; the sandbox's extended key is not a key this signer could pay from."""
        try:
            keys.receiving_address()
        except ImproperlyConfigured:
            return False
        return True

    def sign(self, tx: UnsignedTx) -> SignedTx:
        approved = check(tx.code, tx.payload, self.rules(tx.code), self._keypair.pubkey())
        signature = self._keypair.sign_message(approved.raw)
        txid = str(signature)
        with self.journal.lock:
            self.journal.admit(approved, txid, self.chain)
            try:
                newest = self.chain.block_height(tx.code, "processed") + MAX_PROCESSING_AGE
            except Exception:
                raise SignRefused("the node cannot say its block height now: asked again later") from None
            self.journal.record(approved, txid, max(approved.last_valid_block_height, newest))
        wire = bytes(Transaction.populate(approved.message, [signature]))
        return SignedTx(
            txid=txid,
            raw=stored(wire, approved.last_valid_block_height),
            # what it pays, whatever the request said: the signature's base fee and its priority fee
            fee=from_lamports(LAMPORTS_PER_SIGNATURE + approved.priority_fee),
            sender=self.hot_address(),
        )


class SolanaSocketSigner(SocketSigner):
    """The signer process, asked over its Unix socket (chains.evm.signer.SocketSigner); its refusal is
    this family's SignRefused."""

    refused = SignRefused


def seed_signer(mnemonic: str, journal: str = ":memory:") -> SolanaSigner:
    """The signer process's Solana signer of `mnemonic`, its journal at `journal` (chains.signers)."""
    return SolanaSigner(mnemonic, SolanaJournal(journal))


@cache
def get_signer() -> SolanaSigner | SolanaSocketSigner:
    path = signer_location()
    return SolanaSigner(DEVELOPMENT_MNEMONIC) if path is None else SolanaSocketSigner(path)

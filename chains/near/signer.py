"""The NEAR signer: the seed's SLIP-10 ed25519 keys (chains.near.keys) sign the hot account's payouts and
the deposit accounts' sweeps, in the signer process (`manage.py run_signer`, beside the other families of
the same seed) or in-process in development, only what chains.near.policy approves after decoding the
transaction itself; and it exports the public keys of its deposit key pool (chains.near.pool), never a
private one.

Its hot key is m/44'/397'/0', whose public key is `CHAIN_XPUBS["near"]` (the development key when none is
configured); deposit key i is m/44'/397'/1'/i'. It signs sha256 of the borsh transaction it decoded (never
a hash it is given) and answers the SignedTransaction's bytes in hex (`raw`, what is stored and re-sent),
its txid (the base58 hash NEAR knows it by), the sender (the signer_id) and the nonce.

Web and workers reach the signer process through the same socket as the EVM signer (`EVM_SIGNER`);
`EVM_SIGNER=local` signs in-process with the public development seed. The limits (`payout_limit`,
`daily_limit`) and the hot account are the `near` entry of `CHAIN_NODES` (chains.near.config).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache

from django.core.exceptions import ImproperlyConfigured

from chains.base import SignedTx, UnsignedTx
from chains.derivation import DEVELOPMENT_MNEMONIC
from chains.evm.signer import SocketSigner
from chains.near import config, keys, transaction
from chains.near.config import FAMILY, NATIVE, near_config
from chains.near.policy import Approved, NearRules, SignRefused, check
from chains.signers import open_journal, signer_location
from core.assets import get_asset
from core.errors import UnsupportedAsset
from core.money import number_text

logger = logging.getLogger(__name__)

MAX_KEYS = 1000  # public keys one request may ask for (chains.near.pool asks EXPORT_BATCH at a time)

# Whether the earlier transaction (code, txid, raw hex, signer_id) can never land: its block hash expired
# and the node does not know it. False when it cannot be told.
NeverLands = Callable[[str, str, str, str], bool]


def configured_rules(code: str) -> NearRules:
    """The NEAR signing rules of `code` from its CHAIN_NODES entry; without one every request of it is
    refused."""
    try:
        near = near_config(code)
    except ImproperlyConfigured as exc:
        raise SignRefused(f"no NEAR signing rules for {code}: {exc}") from None
    return NearRules(
        code=code, account=near.account, payout_limit=near.payout_limit, daily_limit=near.daily_limit
    )


def never_lands(code: str, txid: str, raw: str, sender: str) -> bool:
    """Asked of the chain: the backend says the earlier transaction expired (its block hash is past the
    validity period), and then (it cannot land later) the node does not know it."""
    from chains.backend import get_backend
    from chains.near.node import NearNode

    try:
        if get_backend(code).expired(code, raw) is not True:
            return False
        near = near_config(code)
        return NearNode(near.url, api_key=near.api_key).tx_status(txid, sender) is None
    except Exception:
        logger.warning("near signer: the node could not tell whether %s may still land; refused", txid)
        return False


class NearJournal:
    """What the NEAR signer has signed of payouts, in its own file (beside the other families' journals, or
    the same file): the web and the workers can write the database, not this.

    A withdrawal is signed as one transaction: the same one again (the same txid: ed25519 signs it the same),
    or another only once the earlier can never land (`NeverLands`). Per code and UTC day, the payouts within
    `daily_limit` (each withdrawal counted once, at the most any of its transactions moves)."""

    def __init__(self, path: str = ":memory:") -> None:
        self._db = open_journal(
            path,
            "CREATE TABLE IF NOT EXISTS near_signed (txid TEXT PRIMARY KEY, ref TEXT NOT NULL,"
            " code TEXT NOT NULL, amount TEXT NOT NULL, day TEXT NOT NULL, nonce INTEGER NOT NULL,"
            " block_hash TEXT NOT NULL, sender TEXT NOT NULL, raw TEXT NOT NULL)",
        )
        self.lock = threading.Lock()

    def admit(self, approved: Approved, txid: str, gone: NeverLands) -> None:
        """Refuse what the journal forbids (call under `lock`, then `record` what was signed)."""
        row = self._db.execute("SELECT ref FROM near_signed WHERE txid = ?", (txid,)).fetchone()
        if row is not None and row[0] == approved.ref:
            return  # this very transaction: the same signature, nothing more can move
        if row is not None:  # one transaction landing would settle two withdrawals
            raise SignRefused(f"this very transaction was signed for {row[0]}, not {approved.ref}")
        earlier = self._db.execute(
            "SELECT txid, raw, sender FROM near_signed WHERE ref = ? AND code = ?",
            (approved.ref, approved.code),
        ).fetchall()
        for other, raw, sender in earlier:
            if not gone(approved.code, other, raw, sender):
                raise SignRefused(
                    f"{approved.ref} was signed already as {other}, which may still land (or the node cannot "
                    "tell): only that transaction is sent again"
                )
        more = approved.amount - self._most(approved.ref, approved.code)
        if approved.daily_limit is None or more <= 0:
            return
        refs = self._db.execute(
            "SELECT DISTINCT ref FROM near_signed WHERE code = ? AND day = ?", (approved.code, _today())
        ).fetchall()
        total = sum((self._most(ref, approved.code) for (ref,) in refs), more)
        if total > approved.daily_limit:
            raise SignRefused(
                f"{number_text(total)} {approved.code} today is over the daily limit "
                f"{number_text(approved.daily_limit)} of {approved.code}"
            )

    def record(self, approved: Approved, txid: str, raw: str) -> None:
        tx = approved.tx
        self._db.execute(
            "INSERT OR IGNORE INTO near_signed (txid, ref, code, amount, day, nonce, block_hash, sender, raw)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                txid,
                approved.ref,
                approved.code,
                str(approved.amount),
                _today(),
                tx.nonce,
                tx.block_hash.hex(),
                tx.signer_id,
                raw,
            ),
        )

    def _most(self, ref: str, code: str) -> Decimal:
        """The most any transaction of `ref` moves (at most one of them lands)."""
        amounts = self._db.execute(
            "SELECT amount FROM near_signed WHERE ref = ? AND code = ?", (ref, code)
        ).fetchall()
        return max((Decimal(amount) for (amount,) in amounts), default=Decimal(0))


def _today() -> str:
    return datetime.now(UTC).date().isoformat()


class NearSigner:
    """Signs NEAR payouts (hot key) and sweeps (pool keys) of `mnemonic`'s seed after chains.near.policy
    approves them against `rules(code)`, keeping the payouts it signed in `journal`."""

    def __init__(
        self,
        mnemonic: str,
        journal: NearJournal | None = None,
        *,
        rules: Callable[[str], NearRules] = configured_rules,
        gone: NeverLands = never_lands,
    ) -> None:
        self._seed = keys.seed_of(mnemonic)
        self._hot, self.public_key = keys.hot_key(self._seed)
        self.journal = journal or NearJournal()
        self.rules = rules
        self.gone = gone

    def _pool_public_key(self, index: int) -> bytes:
        return keys.pool_key(self._seed, index)[1]

    def hot_address(self) -> str:
        """The hot account: the configured `account`, else the implicit account of the seed's hot key."""
        try:
            return near_config(NATIVE).account
        except ImproperlyConfigured:
            return transaction.implicit_account(self.public_key)

    def uses_development_key(self) -> bool:
        """No NEAR key is configured: the development key is the house's (chains.signers). A key the near
        backend cannot read is not the development key (`has_key_configured` says so)."""
        try:
            return config.uses_development_key()
        except ImproperlyConfigured:
            return False

    def has_key_configured(self) -> bool:
        """CHAIN_XPUBS["near"] is a public key the near backend reads (not the sandbox's extended key)."""
        return config.has_key_configured()

    def matches_configuration(self) -> bool:
        """The seed's hot key is CHAIN_XPUBS["near"] (the development key when none is configured)."""
        try:
            return self.public_key == config.hot_public_key()
        except ImproperlyConfigured:
            return False

    def public_keys(self, code: str, start: int, count: int) -> list[str]:
        """The public keys of pool keys start .. start+count-1, in hex (each one's implicit account)."""
        _require_near(code)
        for name, value, top in (("start", start, keys.POOL_SIZE - 1), ("count", count, MAX_KEYS)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
                raise SignRefused(f"{name} is an int from 0 to {top}, not {value!r}")
        try:
            found = keys.pool_public_keys(self._seed, start, count)
        except ValueError as exc:
            raise SignRefused(str(exc)) from None
        return [key.hex() for _index, key in found]

    def sign(self, tx: UnsignedTx) -> SignedTx:
        approved = check(tx.code, tx.payload, self.rules(tx.code), self.public_key, self._pool_public_key)
        private = self._hot if approved.index is None else keys.pool_key(self._seed, approved.index)[0]
        raw = transaction.sign(approved.tx, private).hex()
        txid = approved.tx.txid()
        if approved.purpose == "payout":
            with self.journal.lock:
                self.journal.admit(approved, txid, self.gone)
                self.journal.record(approved, txid, raw)
        return SignedTx(txid=txid, raw=raw, fee=tx.fee, sender=approved.tx.signer_id, nonce=approved.tx.nonce)


def _require_near(code: str) -> None:
    try:
        family = get_asset(code).family
    except UnsupportedAsset:
        raise SignRefused(f"{code!r} is not a payment code") from None
    if family != FAMILY:
        raise SignRefused(f"{code} is not a NEAR code")


class NearSocketSigner(SocketSigner):
    """The signer process, asked over its Unix socket (chains.evm.signer.SocketSigner); its refusal is
    this family's SignRefused."""

    refused = SignRefused


def seed_signer(mnemonic: str, journal: str = ":memory:") -> NearSigner:
    """The signer process's NEAR signer of `mnemonic`, its journal at `journal` (chains.signers)."""
    return NearSigner(mnemonic, NearJournal(journal))


@cache
def get_signer() -> NearSigner | NearSocketSigner:
    path = signer_location()
    return NearSigner(DEVELOPMENT_MNEMONIC) if path is None else NearSocketSigner(path)

"""The TRON signer: the seed's coin-type-195 account signs, in the signer process (`manage.py run_signer`,
beside the EVM account of the same seed) or in-process in development, only what chains.tron.policy
approves after reading the transaction's bytes itself.

Keys: m/44'/195'/0'/0/<index> the deposit addresses, m/44'/195'/0'/1/0 the hot address, as
`CHAIN_XPUBS["tron"]` derives them (chains.derivation). The signature is over the txid the signer computes
from the bytes it read (chains.tron.transaction.sign); the signed transaction comes back as the JSON body of
`wallet/broadcasttransaction` (`Transaction.to_json`), which is what is stored and re-sent
(`Transaction.from_json` reads it back).

Web and workers reach the signer process through the same socket as the EVM signer (`EVM_SIGNER`);
`EVM_SIGNER=local` signs in-process with the public development seed. The limits of each code
(`TronRules`) come from `rules`: by default `configured_rules`, the code's `CHAIN_NODES` entry (its token
contract and decimals, `fee_limit_cap`, `payout_limit`, `daily_limit`).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache

from bip_utils import Bip32Secp256k1, Bip39SeedGenerator
from django.core.exceptions import ImproperlyConfigured

from chains.base import SignedTx, UnsignedTx
from chains.derivation import DEVELOPMENT_MNEMONIC, derive_address, derive_internal_address
from chains.evm.signer import SocketSigner
from chains.signers import open_journal, signer_location
from chains.tron.config import tron_config
from chains.tron.policy import HOT, RECEIVING, Approved, SignRefused, TronRules, check
from chains.tron.transaction import Transaction, private_key_address, sign
from chains.tron.units import from_units, to_units
from core.money import number_text

logger = logging.getLogger(__name__)

ACCOUNT_PATH = "m/44'/195'/0'"
# A transaction expired this long ago (by the signer's clock) can no longer be in a block: nodes refuse
# it once their head block's time is past its expiration, and their clocks may run a little behind ours.
EXPIRED_MARGIN_MS = 60_000

# Whether a transaction (code, txid) is known never to have been mined; False when it cannot be told.
NeverMined = Callable[[str, str], bool]


# A top-up funds one deposit address's energy for one sweep: the most one transaction may burn, and a
# day's worth of such top-ups, unless the configuration says less.
TOPUPS_A_DAY = 50


def configured_rules(code: str) -> TronRules:
    """The TRON signing rules of `code` from its `CHAIN_NODES` entry (chains.tron.config); a code with no
    TRON node has none, and every request of it is refused."""
    try:
        config = tron_config(code)
    except ImproperlyConfigured as exc:
        raise SignRefused(f"no TRON signing rules for {code}: {exc}") from None
    cap = to_units(config.fee_limit_cap)
    return TronRules(
        code=code,
        contract=config.contract,
        decimals=config.decimals,
        fee_limit_cap=cap,
        topup_cap=config.fee_limit_cap,
        topup_daily_limit=config.fee_limit_cap * TOPUPS_A_DAY,
        payout_limit=config.payout_limit,
        daily_limit=config.daily_limit,
        resource_index=config.resource_index,
    )


def never_mined(code: str, txid: str) -> bool:
    """The node does not know `txid` (asked once its expiration has passed: it can never be mined then)."""
    from chains.backend import get_backend

    try:
        return not get_backend(code).tx_status(code, txid).known
    except Exception:
        logger.warning("tron signer: the node could not tell whether %s was mined; refused", txid)
        return False


class TronJournal:
    """What the TRON signer has signed, in its own file (beside the EVM signer's journal, or the same
    file): the web and the workers can write the database, not this.

    A withdrawal is signed as one transaction: the same bytes again (the same signature), or other bytes
    only once the earlier transaction has expired and the node does not have it (until its expiration it
    may still be mined; after, it never can). Per code and UTC day, the payouts within `daily_limit`
    (each withdrawal counted once, at the most any of its signatures moves) and the top-ups within
    `topup_daily_limit`."""

    def __init__(self, path: str = ":memory:") -> None:
        self._db = open_journal(
            path,
            "CREATE TABLE IF NOT EXISTS tron_signed (txid TEXT PRIMARY KEY, purpose TEXT NOT NULL,"
            " ref TEXT NOT NULL, code TEXT NOT NULL, amount TEXT NOT NULL, day TEXT NOT NULL,"
            " expiration INTEGER NOT NULL)",
        )
        self.lock = threading.Lock()

    def admit(self, approved: Approved, gone: NeverMined, *, now_ms: int | None = None) -> None:
        """Refuse what the journal forbids (call under `lock`, then `record` what was signed)."""
        if self._signed(approved.txid):
            return  # these very bytes: the same signature, nothing more can move
        now = int(time.time() * 1000) if now_ms is None else now_ms
        earlier = self._db.execute(
            "SELECT txid, expiration, amount FROM tron_signed WHERE purpose = ? AND ref = ?",
            (approved.purpose, approved.ref),
        ).fetchall()
        for other, expiration, _amount in earlier if approved.purpose == "payout" else []:
            if expiration + EXPIRED_MARGIN_MS > now:
                raise SignRefused(
                    f"{approved.ref} was signed already as {other}, which may be mined until it expires "
                    f"at {expiration}: only that transaction is sent again"
                )
            if not gone(approved.code, other):
                raise SignRefused(f"{approved.ref} was signed already as {other}, which the node knows")
        more = approved.amount - max((Decimal(row[2]) for row in earlier), default=Decimal(0))
        if approved.daily_limit is None or more <= 0:
            return
        refs = self._db.execute(
            "SELECT DISTINCT ref FROM tron_signed WHERE purpose = ? AND code = ? AND day = ?",
            (approved.purpose, approved.code, _today()),
        ).fetchall()
        total = sum((self._most(ref, approved.purpose) for (ref,) in refs), more)
        if total > approved.daily_limit:
            what = "TRX of top-ups" if approved.purpose == "topup" else approved.code
            limit = "topup_daily_limit" if approved.purpose == "topup" else "daily limit"
            raise SignRefused(
                f"{number_text(total)} {what} today is over the {limit} "
                f"{number_text(approved.daily_limit)} of {approved.code}"
            )

    def record(self, approved: Approved) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO tron_signed (txid, purpose, ref, code, amount, day, expiration)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                approved.txid,
                approved.purpose,
                approved.ref,
                approved.code,
                str(approved.amount),
                _today(),
                approved.raw.expiration,
            ),
        )

    def _signed(self, txid: str) -> bool:
        return self._db.execute("SELECT 1 FROM tron_signed WHERE txid = ?", (txid,)).fetchone() is not None

    def _most(self, ref: str, purpose: str) -> Decimal:
        """The most any signature of `ref` moves (at most one of them is mined), exactly."""
        amounts = self._db.execute(
            "SELECT amount FROM tron_signed WHERE purpose = ? AND ref = ?", (purpose, ref)
        ).fetchall()
        return max((Decimal(amount) for (amount,) in amounts), default=Decimal(0))


def _today() -> str:
    return datetime.now(UTC).date().isoformat()


class TronSigner:
    """Signs TRON transactions with `mnemonic`'s m/44'/195'/0' account after chains.tron.policy approves
    them against `rules(code)`, keeping what it signed in `journal`."""

    def __init__(
        self,
        mnemonic: str,
        journal: TronJournal | None = None,
        *,
        rules: Callable[[str], TronRules] = configured_rules,
        gone: NeverMined = never_mined,
        clock: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self._account = Bip32Secp256k1.FromSeedAndPath(Bip39SeedGenerator(mnemonic).Generate(), ACCOUNT_PATH)
        self._keys: dict[tuple[int, int], bytes] = {}
        self._addresses: dict[tuple[int, int], str] = {}
        self.journal = journal or TronJournal()
        self.rules = rules
        self.gone = gone
        self.clock = clock  # ms since the epoch: what expirations are checked against

    def address(self, chain: int, index: int) -> str:
        """The T... address of m/44'/195'/0'/<chain>/<index>."""
        if (chain, index) not in self._addresses:
            self._addresses[(chain, index)] = private_key_address(self._key(chain, index))
        return self._addresses[(chain, index)]

    def hot_address(self) -> str:
        return self.address(*HOT)

    def _key(self, chain: int, index: int) -> bytes:
        if (chain, index) not in self._keys:
            node = self._account.ChildKey(chain).ChildKey(index)
            self._keys[(chain, index)] = node.PrivateKey().Raw().ToBytes()
        return self._keys[(chain, index)]

    def matches_configuration(self) -> bool:
        """The seed is the one behind CHAIN_XPUBS["tron"]: its hot and first deposit addresses agree."""
        return (
            self.address(*HOT) == derive_internal_address("tron", HOT[1])
            and self.address(RECEIVING, 0) == derive_address("trx", 0)[0]
        )

    def sign(self, tx: UnsignedTx) -> SignedTx:
        now = self.clock()
        approved = check(tx.code, tx.payload, self.rules(tx.code), self.address, now_ms=now)
        key = self._key(approved.chain, approved.index)
        with self.journal.lock:
            self.journal.admit(approved, self.gone, now_ms=now)
            signature = sign(approved.raw_bytes, key)
            self.journal.record(approved)
        signed = Transaction(approved.raw, approved.raw_bytes, (signature,))
        return SignedTx(
            txid=approved.txid,
            raw=json.dumps(signed.to_json(), sort_keys=True),
            fee=from_units(approved.raw.fee_limit),  # the most it can burn, whatever was asked
            sender=approved.sender,
        )


class TronSocketSigner(SocketSigner):
    """The signer process, asked over its Unix socket (chains.evm.signer.SocketSigner); its refusal is
    this family's SignRefused."""

    refused = SignRefused


def seed_signer(mnemonic: str, journal: str = ":memory:") -> TronSigner:
    """The signer process's TRON signer of `mnemonic`, its journal at `journal` (chains.signers)."""
    return TronSigner(mnemonic, TronJournal(journal))


@cache
def get_signer() -> TronSigner | TronSocketSigner:
    path = signer_location()
    return TronSigner(DEVELOPMENT_MNEMONIC) if path is None else TronSocketSigner(path)

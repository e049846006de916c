"""The TON signer: the seed's SLIP-10 ed25519 key m/44'/607'/0' signs the house wallet's external messages,
in the signer process (`manage.py run_signer`, beside the EVM and TRON accounts of the same seed) or
in-process in development, only what chains.ton.policy approves after reading the message itself.

Its public key is `CHAIN_XPUBS["ton"]` (the development key when none is configured: chains.ton.keys);
the house wallet is the wallet v4R2 of that key, which the signer derives itself. It signs the hash of the
signing message it decoded and rebuilt (never a hash it is given) and answers the whole external message:
its BOC, the seqno and valid_until it uses, as JSON (`raw`, what is stored and re-sent), and its txid, the
message's normalized hash (TEP-467, what toncenter's sendBocReturnHash answers as `hash_norm`). The first
message of the wallet (seqno 0) carries its state init, which deploys it.

Web and workers reach the signer process through the same socket as the EVM signer (`EVM_SIGNER`);
`EVM_SIGNER=local` signs in-process with the public development seed. The limits (`payout_limit`,
`daily_limit`) are the `ton` entry of `CHAIN_NODES` (chains.ton.config).
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache

from bip_utils import Bip32Slip10Ed25519, Bip39SeedGenerator
from django.core.exceptions import ImproperlyConfigured

from chains.base import SignedTx, UnsignedTx
from chains.derivation import DEVELOPMENT_MNEMONIC
from chains.evm.signer import SocketSigner
from chains.signers import open_journal, signer_location
from chains.ton.config import ton_config
from chains.ton.keys import DEVELOPMENT_PATH, configured_public_key, development_public_key, house_display
from chains.ton.policy import Approved, SignRefused, TonRules, check
from chains.ton.wallet import external_transfer, public_key_of, wallet_v4r2_address
from core.money import number_text

logger = logging.getLogger(__name__)

ACCOUNT_PATH = DEVELOPMENT_PATH  # m/44'/607'/0', the path of every TON wallet app's first account
# A message past its valid_until by this much (by the signer's clock) can no longer be taken: the chain's
# time may run a little behind ours.
EXPIRED_MARGIN_SECONDS = 60
HOT = (1, 0)  # the other families' (BIP-44 chain, index) of the hot address: TON's is the house wallet

# Whether the earlier message (code, txid, seqno, valid_until) can never pay: it expired unused, or it
# landed and its payment bounced back. False when it cannot be told.
NeverPaid = Callable[[str, str, int, int], bool]


def configured_rules(code: str) -> TonRules:
    """The TON signing rules of `code` from the `ton` entry of CHAIN_NODES; without one every request of
    it is refused."""
    try:
        config = ton_config()
    except ImproperlyConfigured as exc:
        raise SignRefused(f"no TON signing rules for {code}: {exc}") from None
    if config is None or code != "ton":
        raise SignRefused(f"no TON signing rules for {code}: CHAIN_NODES has no ton entry")
    return TonRules(code=code, payout_limit=config.payout_limit, daily_limit=config.daily_limit)


def never_paid(code: str, txid: str, seqno: int, valid_until: int) -> bool:
    """Asked of the chain (the ton backend): the earlier message expired with its seqno unused, or its
    payment bounced back."""
    from chains.backend import get_backend

    try:
        return bool(get_backend(code).never_paid(code, txid, seqno, valid_until))  # type: ignore[attr-defined]
    except Exception:
        logger.warning("ton signer: the node could not tell whether %s paid; refused", txid)
        return False


class TonJournal:
    """What the TON signer has signed, in its own file (beside the other families' journals, or the same
    file): the web and the workers can write the database, not this.

    A withdrawal is signed as one message: the same message again (the same signature), or another only
    once the earlier can never pay (`NeverPaid`: expired with its seqno unused, or bounced back). Per code
    and UTC day, the payouts within `daily_limit` (each withdrawal counted once, at the most any of its
    messages moves)."""

    def __init__(self, path: str = ":memory:") -> None:
        self._db = open_journal(
            path,
            "CREATE TABLE IF NOT EXISTS ton_signed (txid TEXT PRIMARY KEY, ref TEXT NOT NULL,"
            " code TEXT NOT NULL, amount TEXT NOT NULL, day TEXT NOT NULL, seqno INTEGER NOT NULL,"
            " valid_until INTEGER NOT NULL)",
        )
        self.lock = threading.Lock()

    def admit(self, approved: Approved, txid: str, gone: NeverPaid, *, now: int) -> None:
        """Refuse what the journal forbids (call under `lock`, then `record` what was signed)."""
        signed_for = self._signed_for(txid)
        if signed_for == approved.ref:
            return  # this very message: the same signature, nothing more can move
        if signed_for is not None:  # one message landing would settle two withdrawals
            raise SignRefused(f"this very message was signed for {signed_for}, not {approved.ref}")
        earlier = self._db.execute(
            "SELECT txid, seqno, valid_until, amount FROM ton_signed WHERE ref = ?", (approved.ref,)
        ).fetchall()
        for other, seqno, valid_until, _amount in earlier:
            if gone(approved.code, other, seqno, valid_until):
                continue  # expired unused, or bounced back: it paid nothing and never will
            if valid_until + EXPIRED_MARGIN_SECONDS > now:
                raise SignRefused(
                    f"{approved.ref} was signed already as {other}, which may land until {valid_until}: "
                    "only that message is sent again"
                )
            raise SignRefused(f"{approved.ref} was signed already as {other}, which may have paid it")
        more = approved.amount - max((Decimal(row[3]) for row in earlier), default=Decimal(0))
        if approved.daily_limit is None or more <= 0:
            return
        refs = self._db.execute(
            "SELECT DISTINCT ref FROM ton_signed WHERE code = ? AND day = ?", (approved.code, _today())
        ).fetchall()
        total = sum((self._most(ref) for (ref,) in refs), more)
        if total > approved.daily_limit:
            raise SignRefused(
                f"{number_text(total)} {approved.code} today is over the daily limit "
                f"{number_text(approved.daily_limit)} of {approved.code}"
            )

    def record(self, approved: Approved, txid: str) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO ton_signed (txid, ref, code, amount, day, seqno, valid_until)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                txid,
                approved.ref,
                approved.code,
                str(approved.amount),
                _today(),
                approved.seqno,
                approved.valid_until,
            ),
        )

    def _signed_for(self, txid: str) -> str | None:
        row = self._db.execute("SELECT ref FROM ton_signed WHERE txid = ?", (txid,)).fetchone()
        return None if row is None else str(row[0])

    def _most(self, ref: str) -> Decimal:
        amounts = self._db.execute("SELECT amount FROM ton_signed WHERE ref = ?", (ref,)).fetchall()
        return max((Decimal(amount) for (amount,) in amounts), default=Decimal(0))


def _today() -> str:
    return datetime.now(UTC).date().isoformat()


def private_key(mnemonic: str) -> bytes:
    """The 32-byte ed25519 private key (seed) of m/44'/607'/0' of `mnemonic` (SLIP-10)."""
    account = Bip32Slip10Ed25519.FromSeedAndPath(Bip39SeedGenerator(mnemonic).Generate(), ACCOUNT_PATH)
    return bytes(account.PrivateKey().Raw().ToBytes())


class TonSigner:
    """Signs the house wallet's messages with `mnemonic`'s m/44'/607'/0' key after chains.ton.policy
    approves them against `rules(code)`, keeping what it signed in `journal`."""

    def __init__(
        self,
        mnemonic: str,
        journal: TonJournal | None = None,
        *,
        rules: Callable[[str], TonRules] = configured_rules,
        gone: NeverPaid = never_paid,
        clock: Callable[[], int] = lambda: int(time.time()),
    ) -> None:
        self._seed = private_key(mnemonic)
        self.public_key = public_key_of(self._seed)
        self.house = wallet_v4r2_address(self.public_key)
        self.journal = journal or TonJournal()
        self.rules = rules
        self.gone = gone
        self.clock = clock  # unix seconds: what valid_until is checked against

    def address(self, chain: int, index: int) -> str:
        """The house wallet (non-bounceable, as Kassa shows it): TON's one account, the hot address
        (chain 1, index 0) of the other families' numbering. No other is derived."""
        if (chain, index) != HOT:
            raise ValueError("the TON signer has one wallet, the house wallet (1, 0)")
        return house_display(self.house)

    def hot_address(self) -> str:
        """The house wallet: where TON payouts leave from (chains.signers)."""
        return house_display(self.house)

    def uses_development_key(self) -> bool:
        """No TON key is configured: the development key is the house's (chains.signers)."""
        return configured_public_key() is None

    def matches_configuration(self) -> bool:
        """Its public key is CHAIN_XPUBS["ton"] (the development key when none is configured)."""
        configured = configured_public_key()
        return self.public_key == (configured if configured is not None else development_public_key())

    def sign(self, tx: UnsignedTx) -> SignedTx:
        now = self.clock()
        approved = check(tx.code, tx.payload, self.rules(tx.code), now=now)
        signed = external_transfer(
            self._seed,
            approved.transfer,
            seqno=approved.seqno,
            valid_until=approved.valid_until,
            with_state_init=approved.seqno == 0,  # the first message deploys the wallet
        )
        txid = signed.hash_norm.hex()
        with self.journal.lock:
            self.journal.admit(approved, txid, self.gone, now=now)
            self.journal.record(approved, txid)
        raw = {
            "boc": base64.b64encode(signed.boc).decode(),
            "seqno": signed.seqno,
            "valid_until": signed.valid_until,
            "wallet": signed.wallet,
        }
        return SignedTx(
            txid=txid, raw=json.dumps(raw, sort_keys=True), fee=tx.fee, sender=house_display(self.house)
        )


class TonSocketSigner(SocketSigner):
    """The signer process, asked over its Unix socket (chains.evm.signer.SocketSigner); its refusal is
    this family's SignRefused."""

    refused = SignRefused


def seed_signer(mnemonic: str, journal: str = ":memory:") -> TonSigner:
    """The signer process's TON signer of `mnemonic`, its journal at `journal` (chains.signers)."""
    return TonSigner(mnemonic, TonJournal(journal))


@cache
def get_signer() -> TonSigner | TonSocketSigner:
    path = signer_location()
    return TonSigner(DEVELOPMENT_MNEMONIC) if path is None else TonSocketSigner(path)

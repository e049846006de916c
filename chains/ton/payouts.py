"""TON payouts (see chains.ton.backend): one withdrawal an external message of the house wallet v4R2,
signed by the TON signer (chains.ton.signer) and driven by withdrawals.payouts.

- **One message at a time.** The wallet takes an external message only with its stored seqno, then moves
  to the next: two messages built at once would share a seqno and only one could land. So a payout waits
  (`WalletBusy`, shown on the withdrawal, no alert) while an earlier message of the wallet is stored and not
  settled; each message pays one withdrawal (`max_outputs` 1). TON settles in seconds, so the queue moves
  at the payout monitor's pace.
- **Built here, from the chain.** The wallet's current seqno (its get method) and a `valid_until`
  `VALID_SECONDS` after the chain's time (toncenter's `sync_utime`, never the local clock). The signer
  receives the unsigned signing message (chains.ton.policy) and answers the external message; what is
  stored and re-sent is its BOC with the seqno and valid_until (JSON), its txid the message's normalized
  hash (TEP-467: what sendBocReturnHash answers as `hash_norm`, the same however the message is wrapped).
- **Fees.** toncenter's estimateFee of this very message (with the wallet's state init while it is not
  deployed): the source fees (import, storage, gas, forward). The wallet must hold the amount, the fee
  (times `FEE_MARGIN`) and `RESERVE_NANOTONS` for its storage, else the payout waits (InsufficientFunds).
  What the transaction really paid (its `fee`) is booked once it is listed.
- **Bounce.** A payment is bounceable as its address's form says: `EQ…`/`kQ…` bounceable, `UQ…`/`0Q…` not;
  a raw `0:…` address is bounceable (as @ton/core reads it: a mistyped or undeployed recipient gets the
  payment back rather than losing it). A bounceable payment is done only once the recipient's transaction
  of it is listed and did not bounce; one that bounced is `TxStatus.bounced` (withdrawals.bounces).
- **Sending.** sendBocReturnHash. A refusal for a message already in the wallet's transactions (a re-send
  of one that landed) counts as sent; one past its valid_until is `Outcome.EXPIRED`; any other is a
  refusal (re-sent, never rebuilt). Final once listed, as the scanner's rule: the chain has no fee
  replacement (`bump`, `child`: None).
- **Rebuilt once, or never.** `expired`: past valid_until on the chain's clock (by the signer's margin)
  and the wallet's seqno still the message's: it can never land, and withdrawals.expiry closes it and
  plans its withdrawal again, once. Past valid_until with the seqno moved on and the message not among the
  wallet's transactions, another message took its seqno: it is never rebuilt (that could pay twice), and
  a person is alerted (`payout_seqno_used`).
"""

from __future__ import annotations

import base64
import json
import logging
from dataclasses import dataclass
from decimal import ROUND_UP, Decimal
from typing import Any

from pytoniq_core import Address, Cell, begin_cell

from alerts.services import alert_raise
from chains.base import (
    BlockRef,
    ChainUnavailable,
    FeeQuote,
    InsufficientFunds,
    Outcome,
    Payment,
    PayoutHeld,
    SignedTx,
    Signer,
    TxStatus,
    UnsignedTx,
)
from chains.models import ChainTx, ChainTxStatus
from chains.ton.keys import house_display, house_public_key, house_raw
from chains.ton.messages import ParsedMessage, parse_message
from chains.ton.node import ExternalMessageRejected, TonCenter, TonNodeError
from chains.ton.policy import signing_request
from chains.ton.results import Transaction
from chains.ton.signer import EXPIRED_MARGIN_SECONDS
from chains.ton.units import from_nanotons, to_nanotons
from chains.ton.wallet import (
    WALLET_V4R2_CODE,
    Transfer,
    normalized_hash,
    signing_message,
    wallet_v4r2_data,
)

logger = logging.getLogger(__name__)

VALID_SECONDS = 600  # a message's valid_until after the chain's time
RESERVE_NANOTONS = 50_000_000  # 0.05 TON the wallet keeps for its storage fees
FEE_MARGIN = Decimal("1.5")  # on the estimated fee, for what the wallet must hold beside the amount
PAGE = 100
SEARCH_PAGES = 10  # pages of a wallet's transactions searched for a message
SEQNO_USED_ALERT = "payout_seqno_used"
WALLET_SUCCESS = (0, 1)  # the compute phase's exit codes of success


class WalletBusy(PayoutHeld):
    """An earlier message of the house wallet is not settled: the next one waits for its seqno."""

    kind = "payout_wallet_busy"
    reason = "Waiting for the house wallet's previous payout to settle"
    alerts = False  # it ends by itself, in seconds


@dataclass(frozen=True)
class StoredMessage:
    """ChainTx.raw of a TON payout: the signed external message and what `expired` needs."""

    boc: bytes
    seqno: int
    valid_until: int

    @classmethod
    def read(cls, raw: str) -> StoredMessage:
        data = json.loads(raw)
        return cls(base64.b64decode(data["boc"]), int(data["seqno"]), int(data["valid_until"]))

    @property
    def txid(self) -> str:
        message = parse_message(Cell.one_from_boc(self.boc))
        assert message.destination is not None
        return normalized_hash(Address(message.destination), message.body).hex()


class TonPayouts:
    """The payout half of TonBackend; `node(code)` and `tip(code)` are the scanner's."""

    def node(self, code: str) -> TonCenter:
        raise NotImplementedError

    def tip(self, code: str) -> BlockRef:
        raise NotImplementedError

    # --- plan ----------------------------------------------------------------------------------------

    def quote_fee(self, code: str) -> FeeQuote:
        """estimateFee of a plain transfer from the house wallet (the message `build` makes is measured
        again, itself)."""
        node, house = self.node(code), house_raw()
        seqno = node.seqno(house)
        now = node.address_information(house).sync_utime
        unsigned = signing_message(
            Transfer(house_display(), 1, bounce=False), seqno=seqno, valid_until=now + VALID_SECONDS
        )
        fee = self._estimate(node, unsigned.end_cell(), seqno)
        return FeeQuote(rate=from_nanotons(fee), unit="TON/message", source="estimateFee")

    def build(self, code: str, payments: list[Payment], fee: FeeQuote) -> UnsignedTx:
        [payment] = payments
        busy = ChainTx.objects.filter(
            code=code,
            kind=ChainTx.Kind.PAYOUT,
            status__in=[ChainTxStatus.SIGNED, ChainTxStatus.BROADCAST],
        ).first()
        if busy is not None:
            raise WalletBusy(f"message {busy.txid[:16]}… goes first")
        node, house = self.node(code), house_raw()
        info = node.address_information(house)
        seqno = node.seqno(house)
        transfer = Transfer(
            destination=payment.to,
            amount=to_nanotons(payment.amount),
            comment=payment.tag or None,
            bounce=payment.bounce,
        )
        unsigned = signing_message(
            transfer, seqno=seqno, valid_until=info.sync_utime + VALID_SECONDS
        ).end_cell()
        try:
            estimated = self._estimate(node, unsigned, seqno)
        except ExternalMessageRejected as exc:
            raise InsufficientFunds(
                f"the house wallet cannot pay the network fee ({exc.error[:120]})"
            ) from None
        margin = int((Decimal(estimated) * FEE_MARGIN).to_integral_value(rounding=ROUND_UP))
        need = transfer.amount + margin + RESERVE_NANOTONS
        if info.balance < need:
            raise InsufficientFunds(
                f"{house_display()} holds {from_nanotons(info.balance)} TON, {from_nanotons(need)} needed "
                f"(the payout, its fee and the {from_nanotons(RESERVE_NANOTONS)} TON the wallet keeps)"
            )
        return UnsignedTx(
            code=code,
            payload=signing_request(payment.key, unsigned),
            payments=(payment,),
            fee=from_nanotons(estimated),
            sender=house_display(),
        )

    def _estimate(self, node: TonCenter, unsigned: Cell, seqno: int) -> int:
        """The source fees (nanotons) of the external message of `unsigned`, signature unchecked; with the
        wallet's state init for its first message (seqno 0: it is not deployed yet)."""
        body = begin_cell().store_bytes(bytes(64)).store_cell(unsigned).end_cell()
        init: dict[str, Any] = {}
        if seqno == 0:
            init = {
                "init_code": WALLET_V4R2_CODE.to_boc(),
                "init_data": wallet_v4r2_data(house_public_key()).to_boc(),
            }
        return node.estimate_fee(house_raw(), body.to_boc(), ignore_chksig=True, **init).total

    def signer(self, code: str) -> Signer:
        from chains.ton.signer import get_signer

        return get_signer()  # type: ignore[no-any-return]

    # --- send ----------------------------------------------------------------------------------------

    def broadcast(self, code: str, tx: SignedTx) -> Outcome:
        stored = StoredMessage.read(tx.raw)
        try:
            sent = self.node(code).send_boc(stored.boc)
        except ExternalMessageRejected as exc:
            if self.tx_status(code, tx.txid).known:
                return Outcome.ALREADY_MINED  # a re-send of the message that took its seqno
            now, _seqno = self._wallet_clock(code)
            if now >= stored.valid_until:  # the wallet takes none with valid_until <= now
                return Outcome.EXPIRED
            logger.warning("ton: the wallet refused %s: %s", tx.txid, exc.error[:200])
            return Outcome.REJECTED
        except TonNodeError as exc:
            logger.warning("ton: toncenter refused %s: %s", tx.txid, exc)
            return Outcome.REJECTED
        if sent.hash_norm is not None and sent.hash_norm.hex() != tx.txid:
            logger.warning("ton: toncenter hashed %s as %s", tx.txid, sent.hash_norm.hex())
        return Outcome.ACCEPTED

    # --- monitor -------------------------------------------------------------------------------------

    def tx_status(self, code: str, txid: str) -> TxStatus:
        """The house wallet's transaction whose inbound message is ours: final once listed; failed when it
        sent nothing; a bounceable payment is final once the recipient's transaction of it is listed, and
        bounced when that one sent it back (decided once the bounce is back in the house wallet)."""
        node = self.node(code)
        found = self._house_transaction(node, txid)
        if found is None:
            return TxStatus(confirmations=0, known=False)
        tip = self.tip(code)
        fee = from_nanotons(found.fee)
        outs = [m.parsed for m in found.out_msgs if m.parsed is not None and m.parsed.kind == "internal"]
        parsed = found.parsed
        if parsed.aborted or parsed.compute_exit_code not in WALLET_SUCCESS or not outs:
            return TxStatus(
                confirmations=1,
                known=True,
                block=tip,
                failed=True,
                failure="failed (the wallet sent no payment)",
                fee_paid=fee,
                final=True,
            )
        out = outs[0]
        if not out.bounce:
            return TxStatus(confirmations=1, known=True, block=tip, fee_paid=fee, final=True)
        landed = self._transaction_of(node, out)
        if landed is None:  # not taken yet: done only once we know it did not bounce
            return TxStatus(confirmations=1, known=True, block=tip, fee_paid=fee, final=False)
        back = [m.parsed for m in landed.out_msgs if m.parsed is not None and m.parsed.bounced]
        if not back:
            return TxStatus(confirmations=1, known=True, block=tip, fee_paid=fee, final=True)
        returned = self._transaction_of(node, back[0])
        if returned is None:  # decided once the bounce is back in the house wallet
            return TxStatus(confirmations=1, known=True, block=tip, fee_paid=fee, final=False, bounced=True)
        # What the house lost: its fee, what the recipient's side kept, the fee of taking the bounce back.
        lost = from_nanotons(max(out.value - back[0].value, 0) + returned.fee)
        return TxStatus(confirmations=1, known=True, block=tip, fee_paid=fee + lost, final=True, bounced=True)

    def expired(self, code: str, raw: str) -> bool:
        """Past its valid_until on the chain's clock (by the signer's margin) with the wallet's seqno still
        its own: it can never land. Past it with the seqno moved on and the message nowhere in the wallet's
        transactions: another message took the seqno; never rebuilt, a person is told."""
        stored = StoredMessage.read(raw)
        try:
            now, seqno = self._wallet_clock(code)
        except ChainUnavailable:
            return False
        if now <= stored.valid_until + EXPIRED_MARGIN_SECONDS:
            return False
        if seqno <= stored.seqno:
            return True
        txid = stored.txid
        if not self.tx_status(code, txid).known:
            alert_raise(
                kind=SEQNO_USED_ALERT,
                key=f"{code}:{txid}",
                message=f"{code} payout {txid}: the house wallet's seqno {stored.seqno} was used by another "
                "message. It is never rebuilt automatically (it could pay twice): a person decides.",
            )
        return False

    def never_paid(self, code: str, txid: str, seqno: int, valid_until: int) -> bool:
        """For the signer: the message paid nothing and never will (bounced back, or expired unused)."""
        status = self.tx_status(code, txid)
        if status.known:
            return status.bounced and status.final is True
        now, current = self._wallet_clock(code)
        return now > valid_until + EXPIRED_MARGIN_SECONDS and current <= seqno

    def _wallet_clock(self, code: str) -> tuple[int, int]:
        """The chain's time as toncenter knows it, and the house wallet's seqno."""
        node, house = self.node(code), house_raw()
        return node.address_information(house).sync_utime, node.seqno(house)

    def _house_transaction(self, node: TonCenter, txid: str) -> Transaction | None:
        """The house wallet's transaction of the external message whose normalized hash is `txid`."""
        try:
            digest = bytes.fromhex(txid)
        except ValueError:
            return None
        house = house_raw()
        position: tuple[int, bytes] | None = None
        for _ in range(SEARCH_PAGES):
            if position is None:
                page = node.transactions(house, limit=PAGE)
            else:
                page = node.transactions(house, limit=PAGE, lt=position[0], hash=position[1])
            for tx in page:
                message = tx.in_msg.parsed if tx.in_msg is not None else None
                if message is not None and message.kind == "external-in" and _normalized(message) == digest:
                    return tx
            if len(page) < PAGE or page[-1].parsed.prev_lt == 0:
                return None
            position = (page[-1].parsed.prev_lt, page[-1].parsed.prev_hash)
        return None

    def _transaction_of(self, node: TonCenter, out: ParsedMessage) -> Transaction | None:
        """The destination's transaction of internal message `out` (after its created_lt), if listed yet."""
        assert out.destination is not None
        position: tuple[int, bytes] | None = None
        for _ in range(SEARCH_PAGES):
            if position is None:
                page = node.transactions(out.destination, limit=PAGE, to_lt=out.created_lt)
            else:
                page = node.transactions(
                    out.destination, limit=PAGE, lt=position[0], hash=position[1], to_lt=out.created_lt
                )
            for tx in page:
                if tx.in_msg is not None and tx.in_msg.hash == out.hash:
                    return tx
            if len(page) < PAGE or page[-1].parsed.prev_lt <= out.created_lt:
                return None
            position = (page[-1].parsed.prev_lt, page[-1].parsed.prev_hash)
        return None

    # --- the rest of the contract --------------------------------------------------------------------

    def spendable(self, code: str) -> Decimal:
        """The house wallet's balance: what payouts leave from."""
        return from_nanotons(self.node(code).address_information(house_raw()).balance)

    def bump(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        return None  # no fee replacement on TON: a message lands or expires

    def child(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        return None


def _normalized(message: ParsedMessage) -> bytes | None:
    if message.destination is None:
        return None
    return normalized_hash(Address(message.destination), message.body)

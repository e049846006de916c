"""Solana payouts (see chains.solana.backend): one withdrawal a transaction, from the hot address (the
receiving address, `CHAIN_XPUBS["sol"]`), signed by the Solana signer (chains.solana.signer) and driven
by withdrawals.payouts.

- The transaction is three instructions, nothing else: SetComputeUnitLimit (COMPUTE_UNIT_LIMIT),
  SetComputeUnitPrice and one System transfer hot -> recipient (chains.solana.policy.payout_message), in a
  legacy message on the node's latest blockhash at `confirmed`. What is stored and re-sent is the signed
  wire transaction with that blockhash's lastValidBlockHeight (chains.solana.signer.stored); the txid is
  its signature.
- The priority fee: the PRIORITY_PERCENTILE-th percentile of getRecentPrioritizationFees with the hot
  address as the writable account (the price recent transactions writing it paid), in micro-lamports a
  compute unit. Over the code's `priority_fee_cap` (price times the unit limit) the payout waits
  (FeeOverCap) rather than go out underpriced: a lower price would likely expire unlanded. The network
  fee is the node's getFeeForMessage for this very message (5,000 lamports a signature plus the priority
  fee).
- Twins: two withdrawals of the same amount to the same address, built on the same blockhash, would be
  the very same transaction (ed25519 signatures are deterministic: one txid, landing once for both).
  The later one pays one micro-lamport a compute unit more, which makes it another transaction; the
  signer's journal never signs one transaction for two withdrawals, should a build elsewhere forget it.
- Rent: the hot address keeps RENT_EXEMPT_MINIMUM after the amount and the fee (else InsufficientFunds);
  a recipient that holds nothing is created by the transfer and must get at least that much, else the
  runtime fails the transaction: such a payout is refused before anything is signed (RecipientBelowRent),
  and waits with the reason.
- Sent with sendTransaction (preflight at `confirmed`): AlreadyProcessed, or a refusal of a signature the
  node knows, counts as sent; "Blockhash not found" once the finalized block height is past the
  lastValidBlockHeight is EXPIRED, before that the node is behind (sent again later). Solana has no fee
  replacement (`bump`, `child`: None) and no nonce to release.
- Done at the chain's finality: the signature's status `finalized` (`TxStatus.final`); one with `err`
  failed, decided at finalized too, its fee (getTransaction's meta.fee) paid and booked all the same.
- `expired`: the finalized block height is past lastValidBlockHeight (by the signer's margin), so no
  block to come can include it. Finalized, not confirmed: a confirmed block may still be abandoned for a
  fork at a lower height, a finalized one never. withdrawals.expiry then asks whether the node knows the
  signature (after the height: it cannot land in between) and rebuilds only one it does not: once.
"""

from __future__ import annotations

import base64
import json
import logging
from collections import deque
from decimal import Decimal
from typing import Any

from solders.hash import Hash
from solders.pubkey import Pubkey

from chains.base import (
    FeeOverCap,
    FeeQuote,
    InsufficientFunds,
    Outcome,
    Payment,
    PayoutRefused,
    SignedTx,
    Signer,
    TxStatus,
    UnsignedTx,
)
from chains.solana import keys
from chains.solana.config import solana_config
from chains.solana.errors import (
    AlreadyProcessed,
    BlockhashNotFound,
    SendTransactionError,
    SolanaNodeUnavailable,
)
from chains.solana.node import SolanaNode
from chains.solana.policy import payout_message, priority_fee, signing_request
from chains.solana.signer import SIGNER_MARGIN_BLOCKS
from chains.solana.units import from_lamports, to_lamports
from core.money import number_text

logger = logging.getLogger(__name__)

COMPUTE_UNIT_LIMIT = 1_000  # the payout's three builtin instructions use 450 units
PRIORITY_PERCENTILE = 75  # of the recent slots' prices for writing the hot address
# The least balance of an account without data (128 bytes of overhead at 3,480 lamports a byte-year, two
# years): below it, no transaction may leave an account that holds anything.
RENT_EXEMPT_MINIMUM = 890_880
RENT_EXEMPT_SOL = from_lamports(RENT_EXEMPT_MINIMUM)
CONFIRMED, FINALIZED = "confirmed", "finalized"
# The messages this process built lately, per code (see the module's doc: twins).
BUILT_REMEMBERED = 256
_BUILT: dict[str, deque[bytes]] = {}


class RecipientBelowRent(PayoutRefused):
    """The recipient holds nothing, and the payout is less than an account must hold to exist: the
    runtime would fail the transaction (fee spent, nothing paid), so it is never signed."""

    refused_by = "Solana"


def stored_transaction(raw: str) -> tuple[bytes, int]:
    """The wire bytes and lastValidBlockHeight of a stored payout (chains.solana.signer.stored)."""
    data: Any = json.loads(raw)
    return base64.b64decode(data["transaction"], validate=True), int(data["last_valid_block_height"])


def percentile(values: list[int], percent: int) -> int:
    """The nearest-rank percentile (0 for no values): the least value at least `percent`% are at or
    below."""
    if not values:
        return 0
    ordered = sorted(values)
    rank = -(-percent * len(ordered) // 100)  # rounded up: never under the percentile
    return ordered[max(rank, 1) - 1]


class SolanaPayouts:
    """The payout half of SolanaBackend; `node(code)` is the scanner's."""

    def node(self, code: str) -> SolanaNode:
        raise NotImplementedError

    def hot_address(self, code: str) -> str:
        return keys.receiving_address()

    def quote_fee(self, code: str) -> FeeQuote:
        """The compute-unit price (micro-lamports) recent transactions writing the hot address paid."""
        fees = self.node(code).recent_prioritization_fees([self.hot_address(code)])
        price = percentile([fee.fee for fee in fees], PRIORITY_PERCENTILE)
        cap = solana_config(code).priority_fee_cap_lamports
        lamports = priority_fee(COMPUTE_UNIT_LIMIT, price)
        if lamports > cap:
            raise FeeOverCap(
                f"the priority fee of {number_text(from_lamports(lamports))} SOL ({price} micro-lamports a "
                f"compute unit) is over the configured priority_fee_cap {number_text(from_lamports(cap))} SOL"
            )
        # Stored as "<rate> <unit> (<source>)" in 40 characters: the source is the percentile of
        # getRecentPrioritizationFees.
        return FeeQuote(rate=Decimal(price), unit="microlamports/CU", source=f"p{PRIORITY_PERCENTILE}")

    def build(self, code: str, payments: list[Payment], fee: FeeQuote) -> UnsignedTx:
        [payment] = payments
        node = self.node(code)
        hot, to = Pubkey.from_string(self.hot_address(code)), Pubkey.from_string(payment.to)
        lamports = to_lamports(payment.amount)
        latest = node.latest_blockhash(CONFIRMED)
        built = _BUILT.setdefault(code, deque(maxlen=BUILT_REMEMBERED))
        price = int(fee.rate)
        while True:
            message = payout_message(
                hot,
                to,
                lamports,
                Hash.from_string(latest.blockhash),
                unit_limit=COMPUTE_UNIT_LIMIT,
                unit_price=price,
            )
            if bytes(message) not in built:
                break
            price += 1  # another withdrawal's very transaction: made another one (see the module's doc)
        network_fee = node.fee_for_message(bytes(message), commitment=CONFIRMED)
        if network_fee is None:
            raise SolanaNodeUnavailable("getFeeForMessage: the node does not know the blockhash it just gave")
        held = node.balance(str(hot), CONFIRMED)
        need = lamports + network_fee + RENT_EXEMPT_MINIMUM
        if held < need:
            raise InsufficientFunds(
                f"{hot} holds {number_text(from_lamports(held))} SOL, {number_text(from_lamports(need))} "
                f"needed (the payout, the network fee and the {number_text(RENT_EXEMPT_SOL)} SOL the account "
                "keeps to stay rent-exempt)"
            )
        if lamports < RENT_EXEMPT_MINIMUM and node.balance(str(to), CONFIRMED) == 0:
            raise RecipientBelowRent(
                f"{to} holds no SOL, and {number_text(payment.amount)} SOL is less than the "
                f"{number_text(RENT_EXEMPT_SOL)} SOL a new account must receive "
                "(rent-exempt minimum): the transfer would fail"
            )
        built.append(bytes(message))
        return UnsignedTx(
            code=code,
            payload=signing_request(
                message, ref=payment.key, last_valid_block_height=latest.last_valid_block_height
            ),
            payments=(payment,),
            fee=from_lamports(network_fee),
            sender=str(hot),
        )

    def signer(self, code: str) -> Signer:
        from chains.solana.signer import get_signer

        return get_signer()  # type: ignore[no-any-return]

    def broadcast(self, code: str, tx: SignedTx) -> Outcome:
        wire, last_valid = stored_transaction(tx.raw)
        try:
            self.node(code).send_transaction(wire, preflight_commitment=CONFIRMED)
        except AlreadyProcessed:
            return Outcome.ALREADY_MINED  # sent before (a lost answer, a worker killed after the send)
        except SendTransactionError as exc:
            status = self.tx_status(code, tx.txid)
            if status.known:
                return Outcome.ALREADY_MINED
            if isinstance(exc, BlockhashNotFound):
                if self._finalized_height(code) > last_valid:
                    return Outcome.EXPIRED
                logger.info("solana: the node does not know %s's blockhash yet; sent again later", tx.txid)
                return Outcome.UNAVAILABLE
            logger.warning("solana: the node refused %s: %s", tx.txid, exc)
            return Outcome.REJECTED
        return Outcome.ACCEPTED

    def tx_status(self, code: str, txid: str) -> TxStatus:
        status = self.deposit_status(code, txid)
        if not status.known or not status.final:
            return status
        landed = self.node(code).transaction(txid, commitment=FINALIZED)
        if landed is None or landed.meta is None:
            return status  # its status is finalized, its body not served yet: read again next time
        failure = f"failed ({_error_text(landed.meta.err)})" if status.failed else ""
        return TxStatus(
            confirmations=status.confirmations,
            known=True,
            block=status.block,
            failed=status.failed,
            failure=failure,
            fee_paid=from_lamports(landed.meta.fee),
            final=True,
        )

    def deposit_status(self, code: str, txid: str) -> TxStatus:
        raise NotImplementedError

    def expired(self, code: str, raw: str) -> bool:
        """The finalized block height is past the stored transaction's lastValidBlockHeight by the signer's
        margin (so that the signer agrees to sign its successor): no block to come can include it. Whether
        one did already is the caller's question (withdrawals.expiry asks the node next)."""
        _, last_valid = stored_transaction(raw)
        try:
            return self._finalized_height(code) > last_valid + SIGNER_MARGIN_BLOCKS
        except SolanaNodeUnavailable:
            return False

    def _finalized_height(self, code: str) -> int:
        return self.node(code).block_height(FINALIZED)

    def spendable(self, code: str) -> Decimal:
        """What the hot address can pay out: its finalized balance less what keeps it rent-exempt."""
        held = self.node(code).balance(self.hot_address(code), FINALIZED)
        return from_lamports(max(held - RENT_EXEMPT_MINIMUM, 0))

    def bump(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        return None  # no fee replacement: a transaction lands or its blockhash expires

    def child(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        return None


def _error_text(err: Any) -> str:
    """A TransactionError as Agave's JSON writes it, in a word or two ("InsufficientFundsForRent")."""
    if isinstance(err, str):
        return err
    if isinstance(err, dict) and len(err) == 1:
        [(name, _)] = err.items()
        return str(name)
    return "failed"

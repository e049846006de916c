"""NEAR payouts (see chains.near.backend): one withdrawal a transaction, one Transfer from the hot account,
signed by the NEAR signer (chains.near.signer) and driven by withdrawals.payouts.

- **One payout at a time.** An access key's nonces must be used in increasing order: a later transaction
  landing first would void an earlier one built with a lower nonce. So a payout waits (`HotAccountBusy`,
  shown on the withdrawal, no alert) while an earlier payout of the hot account is stored and not settled;
  NEAR settles in seconds, so the queue moves at the payout monitor's pace.
- **Built here, from the chain at `final`.** The nonce is the hot key's access-key nonce + 1, read at each
  build (no nonce book: the signer reports none, chains.near.signer); a rebuild after a payout expired
  unlanded takes that same nonce again, which is safe: the expired one can never land (its block hash is
  too old). The block hash is the final block's. A named recipient that
  does not exist is refused (its receipt would fail and the deposit come back, less the fees); an implicit
  one (64 hex) is created by the transfer, which costs more.
- **Fees.** The gas of a Transfer's receipt (nearcore's runtime parameters: action receipt creation and
  transfer, send and execution; plus CreateAccount and a full-access AddKey when the transfer creates an
  implicit account, and nearcore's account creation charge) times the latest block's gas price times
  `FEE_MARGIN` (the price may rise by 1% a block), rounded up. The hot account keeps its storage staking
  (storage_usage x 10^19 yocto) after the amount and the fee, else the payout waits (InsufficientFunds).
  What the transaction really burnt (`tokens_burnt` of it and its receipts) is booked once final.
- **Sending.** `send_tx` with `wait_until` NONE. A refusal of a transaction the node already knows (a
  re-send) counts as sent; one refused as `Expired` is `Outcome.EXPIRED`; any other a refusal (re-sent,
  never rebuilt). Done at the chain's finality (`final_execution_status` FINAL), never at a count.
- **Rebuilt once, or never.** `expired`: the block hash it names is older than the chain's
  `transaction_validity_period` (+ `EXPIRED_MARGIN_BLOCKS`) at the final block: no chunk can include it
  now; withdrawals.payouts rebuilds it then only if the node does not know it. A block hash the node does
  not know is never taken for expired (a lagging node would say the same). No fee replacement (`bump`,
  `child`: None) and nothing to release.
"""

from __future__ import annotations

import logging
from decimal import ROUND_UP, Context, Decimal

from chains.base import (
    BlockRef,
    FeeQuote,
    InsufficientFunds,
    Outcome,
    Payment,
    PayoutHeld,
    PayoutRefused,
    SignedTx,
    Signer,
    TxStatus,
    UnsignedTx,
)
from chains.models import ChainTx, ChainTxStatus
from chains.near import transaction
from chains.near.config import near_config
from chains.near.errors import NearTxRefused
from chains.near.node import NearNode
from chains.near.policy import signing_request
from chains.near.results import Account
from chains.near.transaction import Transaction, Transfer
from chains.near.units import from_yocto, to_yocto

logger = logging.getLogger(__name__)

# nearcore's runtime parameters (core/parameters/res/runtime_configs), gas of each, paid once when the
# receipt is sent and once when it is executed (send_sir/send_not_sir and execution are equal for these).
RECEIPT_GAS = 108_059_500_000  # action_receipt_creation
TRANSFER_GAS = 115_123_062_500  # action_transfer
CREATE_ACCOUNT_GAS = 3_850_000_000_000  # action_create_account: an implicit account created by the transfer
ADD_FULL_ACCESS_KEY_GAS = 101_765_125_000  # action_add_full_access_key: its key, added with it
ACCOUNT_CREATION_CHARGE = 7 * 10**21  # yocto (0.007 NEAR): charged with the gas for a new account
DELETE_ACCOUNT_GAS = 147_489_000_000  # action_delete_account (a sweep)
STORAGE_YOCTO_PER_BYTE = 10**19  # storage_amount_per_byte
FEE_MARGIN = Decimal("1.2")  # on gas x gas price: the price may rise 1% a block until the receipt runs
EXPIRED_MARGIN_BLOCKS = 10  # past the validity period, so that the node that decides agrees
_EXACT = Context(prec=80)
_validity: dict[str, int] = {}  # node url -> transaction_validity_period, read once


class HotAccountBusy(PayoutHeld):
    """An earlier payout of the hot account is not settled: the next one waits for its nonce."""

    kind = "payout_wallet_busy"
    reason = "Waiting for the hot account's previous payout to settle"
    alerts = False  # it ends by itself, in seconds


def fee_yocto(gas: int, gas_price: int) -> int:
    """What `gas` costs at `gas_price` with FEE_MARGIN, rounded UP to a whole yocto."""
    cost = Decimal(gas * gas_price) * FEE_MARGIN
    return int(cost.to_integral_value(rounding=ROUND_UP, context=_EXACT))


def fee_near(yocto: int) -> Decimal:
    """`yocto` as NEAR rounded UP to Kassa's 18 places (a fee is never under-stated)."""
    return from_yocto(yocto, ROUND_UP)


def transfer_gas(creates_account: bool) -> int:
    gas = 2 * (RECEIPT_GAS + TRANSFER_GAS)
    if creates_account:
        gas += 2 * (CREATE_ACCOUNT_GAS + ADD_FULL_ACCESS_KEY_GAS)
    return gas


def storage_reserve(account: Account) -> int:
    """The yocto an account must keep for the bytes it stores."""
    return account.storage_usage * STORAGE_YOCTO_PER_BYTE


class NearPayouts:
    """The payout half of NearBackend; `node(code)` is the scanner's, `hot_address(code)` the backend's."""

    def node(self, code: str) -> NearNode:
        raise NotImplementedError

    def hot_address(self, code: str) -> str:
        raise NotImplementedError

    # --- plan ----------------------------------------------------------------------------------------

    def quote_fee(self, code: str) -> FeeQuote:
        """The latest block's gas price (the fee of a payout depends on its recipient: met in `build`)."""
        return FeeQuote(rate=Decimal(self.node(code).gas_price()), unit="yocto/gas", source="gas_price")

    def build(self, code: str, payments: list[Payment], fee: FeeQuote) -> UnsignedTx:
        [payment] = payments
        hot = self.hot_address(code)
        busy = ChainTx.objects.filter(
            code=code,
            kind=ChainTx.Kind.PAYOUT,
            sender=hot,
            status__in=[ChainTxStatus.SIGNED, ChainTxStatus.BROADCAST],
        ).first()
        if busy is not None:
            raise HotAccountBusy(f"payout {busy.txid[:16]}… goes first")
        problem = transaction.account_id_problem(payment.to)
        if problem is not None:
            raise PayoutRefused(f"the recipient {problem}")
        node, config = self.node(code), near_config(code)
        key = node.access_key(hot, transaction.public_key_text(config.hot_key))
        if key is None or not key.full_access:
            raise InsufficientFunds(
                f"the hot account {hot} does not exist or does not hold the hot key as a full-access key: "
                "fund it (an implicit account is created by its first deposit) or add the key"
            )
        creates = False
        if payment.to != hot and node.account(payment.to) is None:
            if not transaction.is_implicit(payment.to):
                raise PayoutRefused(
                    f"the account {payment.to} does not exist: the transfer's receipt would fail"
                )
            creates = True  # a NEAR-implicit account is created by the transfer
        burn = fee_yocto(transfer_gas(creates), int(fee.rate)) + (ACCOUNT_CREATION_CHARGE if creates else 0)
        amount = to_yocto(payment.amount)
        account = node.account(hot)
        need = amount + burn + (storage_reserve(account) if account else 0)
        if account is None or account.amount < need:
            held = from_yocto(account.amount if account else 0)
            raise InsufficientFunds(
                f"{hot} holds {held} NEAR, {fee_near(need)} needed (the payout, its fee and the storage "
                "staking the account keeps)"
            )
        final = node.final_block()
        tx = Transaction(
            signer_id=hot,
            public_key=config.hot_key,
            nonce=key.nonce + 1,
            receiver_id=payment.to,
            block_hash=transaction.b58decode(final.hash),
            actions=(Transfer(amount),),
        )
        return UnsignedTx(
            code=code,
            payload=signing_request("payout", tx, ref=payment.key),
            payments=(payment,),
            fee=fee_near(burn),
            sender=hot,
            nonce=tx.nonce,
        )

    def signer(self, code: str) -> Signer:
        from chains.near.signer import get_signer

        return get_signer()

    # --- send ----------------------------------------------------------------------------------------

    def broadcast(self, code: str, tx: SignedTx) -> Outcome:
        """NearNodeUnavailable (a ChainUnavailable) goes to the caller: the node could not be asked."""
        signed = bytes.fromhex(tx.raw)
        node = self.node(code)
        try:
            node.send_tx(signed)
        except NearTxRefused as exc:
            sender = transaction.decode_signed(signed)[0].signer_id
            status = self._status(code, tx.txid, sender)
            if status.known:  # a re-send of one the node has (its nonce is used: InvalidNonce)
                return Outcome.ALREADY_MINED if status.block else Outcome.ALREADY_KNOWN
            if exc.kind == "Expired":
                return Outcome.EXPIRED
            logger.warning("near: the node refused %s: %s", tx.txid, exc.kind)
            return Outcome.REJECTED
        return Outcome.ACCEPTED

    # --- monitor -------------------------------------------------------------------------------------

    def tx_status(self, code: str, txid: str) -> TxStatus:
        """By its stored sender (the hot account, or a deposit account for a sweep)."""
        sender = ChainTx.objects.filter(code=code, txid=txid).values_list("sender", flat=True).first()
        return self._status(code, txid, sender or self.hot_address(code))

    def _status(self, code: str, txid: str, sender: str) -> TxStatus:
        node = self.node(code)
        result = node.tx_status(txid, sender)
        if result is None:
            return TxStatus(confirmations=0, known=False)
        block = node.block(result.transaction_outcome.block_hash)
        confirmations, ref = 0, None
        if block is not None:  # None: the node answers the transaction but not its block (yet)
            confirmations = max(node.final_block().height - block.height + 1, 0)
            ref = BlockRef(block.height, block.hash)
        failure = result.failure()
        return TxStatus(
            confirmations=confirmations,
            known=True,
            block=ref,
            failed=failure != "",
            failure=f"failed ({failure})" if failure else "",
            fee_paid=from_yocto(result.tokens_burnt),
            final=result.final,
        )

    def expired(self, code: str, raw: str) -> bool:
        """Its block hash is older than the chain's validity period (by EXPIRED_MARGIN_BLOCKS) at the final
        block: no chunk can include it now. Whether the
        node holds the transaction itself is the caller's question: it may be in a block already."""
        tx, _ = transaction.decode_signed(bytes.fromhex(raw))
        node = self.node(code)
        block = node.block(transaction.b58encode(tx.block_hash))
        if block is None:
            # Not known here: garbage collected (days old), or a node behind the one that gave it (a
            # provider's pool). Never guessed expired: a rebuild next to a transaction that can still land
            # would pay twice. It is sent again until a node that has the block says.
            logger.warning("near: the node does not know the block hash of %s; not expired", tx.txid())
            return False
        return node.final_block().height - block.height > self._validity(node) + EXPIRED_MARGIN_BLOCKS

    def _validity(self, node: NearNode) -> int:
        if node.url not in _validity:
            _validity[node.url] = node.genesis_validity()
        return _validity[node.url]

    # --- the rest of the contract --------------------------------------------------------------------

    def spendable(self, code: str) -> Decimal:
        """The hot account's balance less the storage staking it keeps (rounded down)."""
        account = self.node(code).account(self.hot_address(code))
        if account is None:
            return Decimal(0)
        return from_yocto(max(account.amount - storage_reserve(account), 0))

    def bump(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        return None  # no fee replacement on NEAR: a transaction lands or expires

    def child(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        return None

    def release(self, code: str, raw: str) -> None:
        return None  # the nonce is the access key's: nothing held here

"""TRON payouts (see chains.tron.backend): one withdrawal a transaction, from the hot address
m/44'/195'/0'/1/0, signed by the TRON signer (chains.tron.signer) and driven by withdrawals.payouts.

- Fees are read from the chain (`getchainparameters`), never hard-coded: bandwidth burns
  `getTransactionFee` sun a byte when the hot address has no free bandwidth left; a TRC-20 transfer burns
  energy at `getEnergyFee` sun a unit. Its `fee_limit` is the energy `triggerconstantcontract` measures for
  this very transfer (a recipient that never held the token costs about twice as much) times
  `ENERGY_MARGIN`, rounded up; over the code's `fee_limit_cap` the payout waits (FeeOverCap).
- The transaction is built here, not by the node: TAPOS from the node's head block and an expiration
  `EXPIRATION_MS` after its time. What is stored and re-sent is the signed broadcast body.
- A re-send the node already has (DUP_TRANSACTION_ERROR) counts as sent; one the node refuses because its
  head is past the transaction's expiration is EXPIRED, not rejected (it is rebuilt, below). The chain has
  no fee replacement (`bump`, `child`: None) and no nonce to release.
- Done at the chain's finality, not a count: a receipt in a solidified block (`TxStatus.final`). A REVERT or
  OUT_OF_ENERGY receipt is a failed payout, decided at finality as well.
- A stored transaction whose expiration the node's head has passed, and which the node does not know, can
  never be included (`expired`): withdrawals.payouts rebuilds it then, once; before that it is only re-sent.
"""

from __future__ import annotations

import json
import logging
from decimal import ROUND_UP, Decimal

from chains.base import (
    BlockRef,
    FeeOverCap,
    FeeQuote,
    InsufficientFunds,
    Outcome,
    Payment,
    SignedTx,
    Signer,
    TxStatus,
    UnsignedTx,
)
from chains.derivation import derive_internal_address
from chains.tron import address
from chains.tron.config import TronConfig, tron_config
from chains.tron.node import DuplicateTransaction, TronNode, TronNodeError
from chains.tron.policy import HOT, signing_request
from chains.tron.proto import ContractMessage, TransferContract, TriggerSmartContract
from chains.tron.results import ChainParameters
from chains.tron.signer import EXPIRED_MARGIN_MS
from chains.tron.transaction import Transaction, single, tapos, trc20_transfer_data
from chains.tron.units import from_units, to_units

logger = logging.getLogger(__name__)

ENERGY_MARGIN = Decimal("1.2")  # on the energy the node measures for the transfer (rounded up)
EXPIRATION_MS = 10 * 60 * 1000  # after the head block's time; java-tron refuses more than 24 h
# The bytes a signed one-contract transaction adds to its raw_data for bandwidth: the 65-byte signature,
# the protobuf framing and java-tron's allowance for the result (MAX_RESULT_SIZE_IN_TX).
BANDWIDTH_OVERHEAD = 65 + 6 + 64
SUCCESS = "SUCCESS"


class TronPayouts:
    """The payout half of TronBackend; `node(code)` is the scanner's."""

    def node(self, code: str) -> TronNode:
        raise NotImplementedError

    def quote_fee(self, code: str) -> FeeQuote:
        """The chain's energy price (sun a unit); the fee of a token transfer depends on its recipient, so
        its cap is met in `build`."""
        parameters = self.node(code).chain_parameters()
        return FeeQuote(
            rate=Decimal(parameters.sun("getEnergyFee")), unit="sun/energy", source="getchainparameters"
        )

    def build(self, code: str, payments: list[Payment], fee: FeeQuote) -> UnsignedTx:
        [payment] = payments
        config = tron_config(code)
        node = self.node(code)
        hot = self.hot_address(code)
        to = address.validate(payment.to)
        units = to_units(payment.amount, config.decimals)
        parameters = node.chain_parameters()
        fee_limit = 0
        if config.contract is None:
            message: ContractMessage = TransferContract(hot, to, units)
        else:
            held = self.token_units(node, config, hot)
            if held < units:
                raise InsufficientFunds(f"{hot} holds {from_units(held, config.decimals)} {code}")
            data = trc20_transfer_data(to, units)
            message = TriggerSmartContract(hot, config.contract, data)
            fee_limit = self._fee_limit(node, config, parameters, hot, data)
        tx = at_head(node, message, fee_limit)
        burn = self._bandwidth_burn(node, parameters, hot, len(tx.raw_bytes))
        if config.contract is None and not node.account(to).exists:
            burn += parameters.sun("getCreateAccountFee")
            burn += parameters.sun("getCreateNewAccountFeeInSystemContract")
        trx = node.account(hot).balance
        need = burn + fee_limit + (units if config.contract is None else 0)
        if trx < need:
            what = code if config.contract is None else "TRX for the network fee"
            raise InsufficientFunds(f"{hot} holds {from_units(trx)} of {what}, {from_units(need)} needed")
        return UnsignedTx(
            code=code,
            payload=signing_request("payout", tx.raw_bytes, ref=payment.key),
            payments=(payment,),
            fee=from_units(burn + fee_limit),
            sender=hot,
        )

    def _fee_limit(
        self, node: TronNode, config: TronConfig, parameters: ChainParameters, hot: str, data: bytes
    ) -> int:
        assert config.contract is not None
        measured = node.trigger_constant(hot, config.contract, data)
        if measured.reverted:
            raise InsufficientFunds(f"the token refuses the transfer from {hot}: {measured.message}")
        sun = Decimal(measured.energy_used * parameters.sun("getEnergyFee")) * ENERGY_MARGIN
        fee_limit = int(sun.to_integral_value(rounding=ROUND_UP))
        if fee_limit > to_units(config.fee_limit_cap):
            raise FeeOverCap(
                f"the transfer needs a fee_limit of {from_units(fee_limit)} TRX, over the configured "
                f"fee_limit_cap {config.fee_limit_cap} TRX"
            )
        return fee_limit

    def _bandwidth_burn(self, node: TronNode, parameters: ChainParameters, hot: str, size: int) -> int:
        needed = size + BANDWIDTH_OVERHEAD
        if node.account_resource(hot).bandwidth_left >= needed:
            return 0
        return needed * parameters.sun("getTransactionFee")

    def token_units(self, node: TronNode, config: TronConfig, owner: str) -> int:
        """What `owner` holds of the code's token, in its units (balanceOf)."""
        assert config.contract is not None
        call = bytes.fromhex("70a08231") + bytes(12) + address.to_bytes(owner)[1:]  # balanceOf(owner)
        result = node.trigger_constant(owner, config.contract, call)
        return int.from_bytes(result.results[0], "big") if result.results else 0

    def signer(self, code: str) -> Signer:
        from chains.tron.signer import get_signer

        return get_signer()  # type: ignore[no-any-return]

    def broadcast(self, code: str, tx: SignedTx) -> Outcome:
        node = self.node(code)
        try:
            node.broadcast(Transaction.from_json(json.loads(tx.raw)))
        except DuplicateTransaction:
            return Outcome.ALREADY_KNOWN  # sent before (a lost answer, a worker killed after the send)
        except TronNodeError as exc:  # a BroadcastError, or a node answering {"Error": ...}
            status = self.tx_status(code, tx.txid)
            if status.known:
                return Outcome.ALREADY_MINED if status.block else Outcome.ALREADY_KNOWN
            past = self._past_expiration(code, tx.raw)
            if past is not None and past >= 0:  # java-tron takes none expiring at or before its head's time
                return Outcome.EXPIRED
            logger.warning("tron: the node refused %s: %s", tx.txid, exc)
            return Outcome.REJECTED
        return Outcome.ACCEPTED

    def tx_status(self, code: str, txid: str) -> TxStatus:
        node = self.node(code)
        receipt = node.transaction_info(txid)
        if receipt is None:
            return TxStatus(confirmations=0, known=node.transaction(txid) is not None)
        block = node.block(receipt.block_number)
        if block is None:
            return TxStatus(confirmations=0, known=False)  # forked away since the receipt was read
        info = node.node_info()
        failed = receipt.failed or receipt.receipt_result not in ("", SUCCESS)
        return TxStatus(
            confirmations=info.head.height - block.height + 1,
            known=True,
            block=BlockRef(block.height, block.block_id),
            failed=failed,
            failure=f"failed ({receipt.receipt_result or 'FAILED'})" if failed else "",
            fee_paid=from_units(receipt.fee),
            final=block.height <= info.solid.height,
        )

    def expired(self, code: str, raw: str) -> bool:
        """The node's head block is past the stored transaction's expiration (by the signer's margin for
        clocks, so that the signer agrees): no block can include it now. Whether the node holds it is the
        caller's question: it may be in a block already."""
        past = self._past_expiration(code, raw)
        return past is not None and past > EXPIRED_MARGIN_MS

    def _past_expiration(self, code: str, raw: str) -> int | None:
        """How far (ms) the node's head block time is past the stored transaction's expiration (negative:
        before it); None when the node will not say."""
        expiration = Transaction.from_json(json.loads(raw)).raw.expiration
        try:
            head = self.node(code).now_block()
        except TronNodeError:
            return None
        return head.timestamp - expiration

    def spendable(self, code: str) -> Decimal:
        config = tron_config(code)
        node, hot = self.node(code), self.hot_address(code)
        if config.contract is None:
            return from_units(node.account(hot).balance)
        return from_units(self.token_units(node, config, hot), config.decimals)

    def gas_tank(self, code: str) -> Decimal:
        """The hot address's TRX: it burns for every payout's bandwidth and energy."""
        return from_units(self.node(code).account(self.hot_address(code)).balance)

    def hot_address(self, code: str) -> str:
        return derive_internal_address("tron", HOT[1])

    def bump(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        return None  # TRON has no fee replacement: a transaction is mined or expires

    def child(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        return None


def at_head(node: TronNode, message: ContractMessage, fee_limit: int = 0) -> Transaction:
    """`message` in an unsigned transaction built here, not by the node: TAPOS from the node's head block,
    expiring EXPIRATION_MS after that block's time."""
    head = node.now_block()
    raw = single(
        message,
        ref_block=tapos(head.height, head.block_id),
        expiration=head.timestamp + EXPIRATION_MS,
        timestamp=head.timestamp,
        fee_limit=fee_limit,
    )
    return Transaction.build(raw)

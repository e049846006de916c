"""The `evm` backend: eth, bnb, usdterc20 and usdc on any EVM JSON-RPC node (web3.py).

Custody (docs/decisions.md): deposit addresses are derived from `CHAIN_XPUBS["evm"]` (m/44'/60'/0'/0/i);
the hot address, which pays withdrawals and gas top-ups and receives sweeps, is m/44'/60'/0'/1/0 of the
same account. Only the signer process (`manage.py run_signer`) holds the seed; this module plans and
sends what it signed.

- Scanning (one scanner per chain; its codes share the cursor): blocks after the cursor, native transfers
  matched against every EVM deposit address, token `Transfer` logs by contract (recipient-filtered in
  chunks up to `LOG_ADDRESS_CHUNK` addresses, contract-wide and matched here beyond; the block range is
  halved when the node refuses a query). The cursor keeps the last `KEEP_BLOCKS` block hashes: a stored
  hash the node no longer has is a reorg, and the scan resumes from the fork.
- A token transfer's output index is its position among its transaction's logs, which a re-mined
  transaction keeps (a block-wide log index would change and credit it twice).
- Payouts: one transaction per withdrawal, EIP-1559 (`maxFeePerGas = 2 x baseFee + tip`, over
  `fee_cap_gwei` the payout waits), nonces from the `NonceSlot` row of the hot address.
"""

from __future__ import annotations

import json
import logging
from decimal import Decimal
from typing import Any

import requests
from eth_typing import HexStr
from web3 import Web3
from web3.exceptions import BlockNotFound, TransactionNotFound

from alerts.services import alert_raise
from chains.backend import ChainBackend, XpubAddressesMixin
from chains.base import (
    BlockRef,
    FeeQuote,
    InsufficientFunds,
    Outcome,
    Payment,
    PayoutHeld,
    SignedTx,
    TxStatus,
    UnsignedTx,
)
from chains.evm.config import EvmConfig, evm_config
from chains.evm.node import NATIVE_GAS, coin, decode_raw, hot_address, to_units, transfer_call
from chains.evm.scanner import EvmScanner
from chains.models import ChainTx
from chains.nonces import nonce_next
from chains.payuri import eip681

logger = logging.getLogger(__name__)

GAS_MARGIN = Decimal("1.2")  # on the node's estimate for token transfers (rounded up)
REPLACE_FACTOR = Decimal("1.125")  # a replacement offers at least this much more (nodes want >= 10%)


class NonceConflict(PayoutHeld):
    kind = "nonce_conflict"
    reason = "The hot address sent a transaction Kassa did not sign"


class EvmBackend(EvmScanner, XpubAddressesMixin, ChainBackend):
    """The codes of every configured EVM chain; the codes of one chain are scanned together (scan_codes)."""

    name = "evm"
    families = frozenset({"evm"})
    max_outputs = 1
    sweeps = True  # deposits are swept to the hot address, which pays withdrawals (chains.evm.sweeps)
    has_gas_tank = True

    def check_config(self, code: str) -> None:
        super().check_config(code)
        evm_config(code)

    def payment_uri(self, code: str, address: str, amount: Decimal, tag: str | None) -> str:
        """EIP-681 on the configured node's chain (a test network, another token deployment)."""
        config = evm_config(code)
        contract = None if config.contract is None else Web3.to_checksum_address(config.contract)
        return eip681(address, amount, chain_id=config.chain_id, contract=contract, decimals=config.decimals)

    def quote_fee(self, code: str) -> FeeQuote:
        config = evm_config(code)
        with self._node(code) as w3:
            base = int(w3.eth.get_block("latest").get("baseFeePerGas") or 0)
            tip = (
                config.priority_fee_wei
                if config.priority_fee_wei is not None
                else int(w3.eth.max_priority_fee)
            )
        max_fee = 2 * base + tip
        return FeeQuote(
            rate=coin(max_fee, 9),
            unit="gwei",
            source="eip1559",
            over_cap=max_fee > config.fee_cap_wei,
            priority=coin(tip, 9),
        )

    def build(self, code: str, payments: list[Payment], fee: FeeQuote) -> UnsignedTx:
        [payment] = payments
        config = evm_config(code)
        hot = hot_address()
        with self._node(code) as w3:
            call = self.call_for(config, payment.to, payment.amount)
            if config.contract is not None:  # before the estimate, which a short token balance would fail
                self.require_tokens(w3, config, hot, payment.amount)
            if config.contract is None and not w3.eth.get_code(Web3.to_checksum_address(payment.to)):
                gas = NATIVE_GAS
            else:
                estimate = w3.eth.estimate_gas({"from": hot, **call})  # type: ignore[typeddict-item]
                gas = int((Decimal(estimate) * GAS_MARGIN).to_integral_value(rounding="ROUND_UP"))
            tx = self.transaction(config, call, gas=gas, fee=fee, nonce=self.next_nonce(w3, config, hot))
            self.require_native(w3, config, hot, tx["gas"] * tx["maxFeePerGas"] + tx["value"])
        return self.unsigned(code, tx, purpose="payout", ref=payment.key, payments=(payment,), sender=hot)

    def call_for(self, config: EvmConfig, to: str, amount: Decimal) -> dict[str, Any]:
        return transfer_call(config, to, amount)

    def transaction(
        self, config: EvmConfig, call: dict[str, Any], *, gas: int, fee: FeeQuote, nonce: int
    ) -> dict[str, Any]:
        return {
            "type": 2,
            "chainId": config.chain_id,
            "nonce": nonce,
            "gas": gas,
            "maxFeePerGas": to_units(fee.rate, 9),
            "maxPriorityFeePerGas": to_units(fee.priority or Decimal(0), 9),
            **call,
        }

    def unsigned(
        self,
        code: str,
        tx: dict[str, Any],
        *,
        purpose: str,
        ref: str,
        payments: tuple[Payment, ...],
        sender: str,
        index: int | None = None,
    ) -> UnsignedTx:
        payload = json.dumps({"purpose": purpose, "ref": ref, "index": index, "tx": tx}, sort_keys=True)
        fee = coin(tx["gas"] * tx["maxFeePerGas"])
        return UnsignedTx(
            code=code, payload=payload, payments=payments, fee=fee, sender=sender, nonce=tx["nonce"]
        )

    def next_nonce(self, w3: Web3, config: EvmConfig, sender: str) -> int:
        """The stored next nonce of `sender`, checked against the chain: a chain ahead of it means someone
        else sends from this address, and payouts stop until a person looks."""
        mined = int(w3.eth.get_transaction_count(Web3.to_checksum_address(sender), "latest"))
        stored = nonce_next(config.chain, sender)
        if stored is None:
            return int(w3.eth.get_transaction_count(Web3.to_checksum_address(sender), "pending"))
        if mined > stored:
            raise NonceConflict(f"{sender} has sent {mined} transactions, Kassa signed {stored}")
        return stored

    def require_tokens(self, w3: Web3, config: EvmConfig, sender: str, amount: Decimal) -> None:
        held = self.token_balance(w3, config, sender)
        if held < to_units(amount, config.decimals):
            raise InsufficientFunds(f"{sender} holds {coin(held, config.decimals)} {config.code}")

    def require_native(self, w3: Web3, config: EvmConfig, sender: str, wei: int) -> None:
        """`sender` holds `wei` of the native coin (a native payout's value and gas, a token payout's gas)."""
        native = int(w3.eth.get_balance(Web3.to_checksum_address(sender)))
        if native < wei:
            what = config.code if config.contract is None else "the native coin for gas"
            raise InsufficientFunds(f"{sender} holds {coin(native)} of {what}")

    def signer(self, code: str) -> Any:
        from chains.evm.signer import get_signer

        return get_signer()

    def broadcast(self, code: str, tx: SignedTx) -> Outcome:
        with self._node(code) as w3:
            try:
                w3.eth.send_raw_transaction(HexStr(tx.raw))
            except (requests.ConnectionError, requests.Timeout, ConnectionError, TimeoutError):
                raise
            except Exception as exc:  # JSON-RPC errors (and eth-tester's) only say what happened in words
                return self._refusal(w3, tx.txid, str(exc).lower())
        return Outcome.ACCEPTED

    def _refusal(self, w3: Web3, txid: str, message: str) -> Outcome:
        """What a node's refusal to take a transaction means: already known, already mined, or a conflict."""
        if "known transaction" in message or "already known" in message:
            return Outcome.ALREADY_KNOWN
        status = self._status(w3, txid, int(w3.eth.block_number))
        if status.known:
            return Outcome.ALREADY_MINED if status.block else Outcome.ALREADY_KNOWN
        if "nonce" in message:
            return Outcome.CONFLICT  # another transaction of the sender used the nonce
        logger.warning("evm: the node refused %s: %s", txid, message[:200])
        return Outcome.REJECTED

    def tx_status(self, code: str, txid: str) -> TxStatus:
        with self._node(code) as w3:
            return self._status(w3, txid, int(w3.eth.block_number))

    def deposit_status(self, code: str, txid: str) -> TxStatus:
        return self.tx_status(code, txid)  # no wallets: the node answers for every transaction alike

    def in_best_chain(self, code: str, block: BlockRef) -> bool:
        with self._node(code) as w3:
            try:
                found = w3.eth.get_block(block.height)
            except BlockNotFound:
                return False  # the new branch is shorter
            return Web3.to_hex(found["hash"]) == block.hash

    def _status(self, w3: Web3, txid: str, tip: int) -> TxStatus:
        try:
            receipt = w3.eth.get_transaction_receipt(HexStr(txid))
        except TransactionNotFound:
            receipt = None
        if receipt is None:
            try:
                w3.eth.get_transaction(HexStr(txid))
            except TransactionNotFound:
                return TxStatus(confirmations=0, known=False)
            return TxStatus(confirmations=0, known=True)
        block = BlockRef(int(receipt["blockNumber"]), Web3.to_hex(receipt["blockHash"]))
        return TxStatus(
            confirmations=tip - block.height + 1,
            known=True,
            block=block,
            failed=receipt["status"] != 1,
            failure="failed" if receipt["status"] != 1 else "",
            fee_paid=coin(int(receipt["gasUsed"]) * int(receipt.get("effectiveGasPrice") or 0)),
        )

    def spendable(self, code: str) -> Decimal:
        config = evm_config(code)
        with self._node(code) as w3:
            hot = hot_address()
            if config.contract is None:
                return coin(int(w3.eth.get_balance(Web3.to_checksum_address(hot))))
            return coin(self.token_balance(w3, config, hot), config.decimals)

    def hot_address(self, code: str) -> str:
        return hot_address()

    def gas_tank(self, code: str) -> Decimal:
        """The hot address's native coin, which pays every payout's and top-up's gas."""
        with self._node(code) as w3:
            return coin(int(w3.eth.get_balance(Web3.to_checksum_address(hot_address()))))

    def bump(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        """The same transaction (same nonce) offering higher fees: at least REPLACE_FACTOR times the old ones
        and at least the current quote; None when that would pass the cap (it waits as it is)."""
        original = ChainTx.objects.filter(txid=txid).first()
        if original is None or original.nonce is None:
            return None
        config = evm_config(code)
        tx = decode_raw(original.raw)
        max_fee = max(_up(tx["maxFeePerGas"] * REPLACE_FACTOR), to_units(fee.rate, 9))
        tip = max(_up(tx["maxPriorityFeePerGas"] * REPLACE_FACTOR), to_units(fee.priority or Decimal(0), 9))
        if max_fee > config.fee_cap_wei:
            return None
        tx.update(maxFeePerGas=max_fee, maxPriorityFeePerGas=min(tip, max_fee))
        link = original.withdrawal_links.select_related("withdrawal").first()
        if link is None:
            return None
        unsigned = self.unsigned(
            code, tx, purpose="payout", ref=link.withdrawal.reference, payments=(), sender=original.sender
        )
        return self.signer(code).sign(unsigned)  # type: ignore[no-any-return]

    def child(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        return None  # accounts have no change to spend: a stuck transaction is replaced (bump)

    def release(self, code: str, raw: str) -> None:
        """A stored transaction abandoned before it was sent leaves its nonce unused, and every later
        transaction of the hot address waits behind it until a person sends a 0-value transaction with
        that nonce from the hot address. Told once, loudly."""
        tx = decode_raw(raw)
        alert_raise(
            kind="nonce_gap",
            key=f"{code}:{tx['nonce']}",
            message=f"{code}: nonce {tx['nonce']} of the hot address was abandoned unsent; later payouts "
            "wait until a transaction with that nonce is mined",
        )


def _up(value: Decimal) -> int:
    return int(Decimal(value).to_integral_value(rounding="ROUND_UP"))

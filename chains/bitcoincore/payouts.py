"""Payouts from the operator's payout wallet on a Bitcoin Core-family node (withdrawals.payouts drives them).

quote_fee -> build (`walletcreatefundedpsbt`, the inputs locked) -> WalletSigner (`walletprocesspsbt` +
`finalizepsbt`) -> the caller stores the hex -> broadcast (`sendrawtransaction`) -> tx_status; a stuck
payout gets a replacement from `psbtbumpfee` (BIP 125; every payout is built replaceable except on BCH).

Node differences met here (litecoind 0.21.2.1 as run by the tests, Bitcoin Cash Node from its docs):
- `walletcreatefundedpsbt` takes the rate as `feeRate` (coin/kvB; `fee_rate` is sat/vB), refuses one address
  twice even in the array-of-objects form (-8 "duplicated address"), and says "Insufficient funds" with -4
  where Bitcoin Core says it with -6.
- `sendrawtransaction` of a transaction already in the mempool succeeds (no "already known" error): the
  mempool is asked first; one already mined answers -27 "Transaction already in block chain", or -25
  "bad-txns-inputs-missingorspent" once its outputs are spent too.
- `psbtbumpfee` takes `fee_rate` in sat/vB only, and succeeds even where the node will not relay the
  replacement (litecoind without -mempoolreplacement=1): `testmempoolaccept` decides.
- `estimatesmartfee` has no estimate on regtest (`errors`); Bitcoin Cash Node has only `estimatefee`, no
  argument, -1 without an estimate, and no replace-by-fee.
"""

from __future__ import annotations

import contextlib
import logging
from decimal import ROUND_UP, Decimal

from chains.base import (
    BlockRef,
    FeeOverCap,
    FeeQuote,
    InsufficientFunds,
    Outcome,
    Payment,
    PayoutHeld,
    PayoutWalletLocked,
    SignedTx,
    TxStatus,
    UnsignedTx,
)
from chains.bitcoincore.rpc import NodeUnavailable, RpcError
from chains.bitcoincore.wallet import (
    RPC_INVALID_ADDRESS_OR_KEY,
    RPC_VERIFY_ALREADY_IN_CHAIN,
    RPC_VERIFY_ERROR,
    RPC_VERIFY_REJECTED,
    RPC_WALLET_INSUFFICIENT_FUNDS,
    RPC_WALLET_UNLOCK_NEEDED,
    NodeAccess,
)
from payments.assets import get_asset

logger = logging.getLogger(__name__)

SATOSHI = Decimal("0.00000001")
SAT_PER_VB = Decimal(100_000)  # 1 coin/kvB in sat/vB
RPC_METHOD_NOT_FOUND = -32601
# The wallet's own minimum step for a replacement (Core's WALLET_INCREMENTAL_RELAY_FEE, 5 sat/vB), which
# psbtbumpfee enforces on top of the node's incrementalfee.
WALLET_INCREMENTAL_FEE = Decimal("0.00005")


def _amount(value: Decimal) -> Decimal:
    """An exact amount in whole satoshis (validated upstream); a finer one is a bug, never rounded away."""
    exact = value.quantize(SATOSHI)
    if exact != value:
        raise ValueError(f"{value} has more than 8 decimal places")
    return exact


class BitcoinCorePayouts(NodeAccess):
    max_outputs = 500

    def quote_fee(self, code: str) -> FeeQuote:
        """The node's estimate (BCH: `estimatefee`), else the configured fallback; never below what the
        node relays; over the cap is reported, never clamped down."""
        config = self._config(code)
        node = self._node(code)
        rate, source = None, ""
        if get_asset(code).family == "bch":
            estimate = Decimal(node.call("estimatefee"))
            if estimate > 0:
                rate, source = estimate, "estimatefee"
        else:
            answer = node.call("estimatesmartfee", config.fee_target_blocks, "ECONOMICAL")
            if "feerate" in answer and Decimal(answer["feerate"]) > 0:
                rate, source = Decimal(answer["feerate"]), "estimatesmartfee"
        if rate is None:
            rate, source = config.fee_fallback, "fallback"
        info = node.call("getmempoolinfo")
        rate = max(rate, Decimal(info.get("mempoolminfee", 0)), Decimal(info.get("minrelaytxfee", 0)))
        return FeeQuote(rate=rate, unit=f"{code}/kvB", source=source, over_cap=rate > config.fee_cap)

    def build(self, code: str, payments: list[Payment], fee: FeeQuote) -> UnsignedTx:
        """One PSBT paying every payment from the payout wallet, its inputs locked until it is sent or
        released. Payments to one address are paid as one output of their sum (a node refuses an address
        twice); `payments` keeps each of them."""
        if fee.over_cap:
            raise FeeOverCap(f"the network fee rate {fee.rate} {fee.unit} is over the configured cap")
        totals: dict[str, Decimal] = {}
        for payment in payments:
            totals[payment.to] = totals.get(payment.to, Decimal(0)) + _amount(payment.amount)
        outputs = [{address: amount} for address, amount in totals.items()]
        options: dict[str, object] = {"feeRate": fee.rate, "lockUnspents": True}
        if get_asset(code).family != "bch":
            options["replaceable"] = True
        try:
            answer = self._payouts(code).call("walletcreatefundedpsbt", [], outputs, 0, options)
        except RpcError as exc:
            if exc.code == RPC_WALLET_INSUFFICIENT_FUNDS or "insufficient funds" in exc.message.lower():
                raise InsufficientFunds(
                    f"{sum(totals.values(), Decimal(0))} {code} to pay; the node says: {exc.message}"
                ) from exc
            raise
        return UnsignedTx(code=code, payload=str(answer["psbt"]), payments=tuple(payments), fee=answer["fee"])

    def signer(self, code: str) -> WalletSigner:
        return WalletSigner(self, code)

    def broadcast(self, code: str, tx: SignedTx) -> Outcome:
        try:
            try:  # litecoind 0.21 accepts a transaction it already has without a word: ask first
                known = self._in_mempool(code, tx.txid)
            except RpcError:
                known = False
            self._node(code).call("sendrawtransaction", tx.raw)  # known: sent to the peers again
        except NodeUnavailable:
            return Outcome.UNAVAILABLE
        except RpcError as exc:
            return self._refused(code, tx, exc)
        return Outcome.ALREADY_KNOWN if known else Outcome.ACCEPTED

    def _refused(self, code: str, tx: SignedTx, exc: RpcError) -> Outcome:
        text = exc.message.lower()
        if "already-in-mempool" in text or "already in mempool" in text or "already known" in text:
            return Outcome.ALREADY_KNOWN
        if exc.code == RPC_VERIFY_ALREADY_IN_CHAIN or "already in block chain" in text:
            return Outcome.ALREADY_MINED
        try:
            if exc.code in (RPC_VERIFY_REJECTED, RPC_VERIFY_ERROR) and self._mined(code, tx.txid):
                return Outcome.ALREADY_MINED  # its inputs are spent by itself
        except NodeUnavailable:
            return Outcome.UNAVAILABLE
        if "conflict" in text or "missingorspent" in text or "missing inputs" in text:
            return Outcome.CONFLICT
        return Outcome.REJECTED

    def _mined(self, code: str, txid: str) -> bool:
        try:
            return int(self._payouts(code).call("gettransaction", txid).get("confirmations", 0)) > 0
        except (RpcError, PayoutHeld):
            return False

    def tx_status(self, code: str, txid: str) -> TxStatus:
        """The payout wallet's view: confirmations (negative once a conflicting transaction is mined);
        unknown to the wallet, or neither mined nor in the mempool (dropped: send it again), known False."""
        try:
            answer = self._payouts(code).call("gettransaction", txid)
        except RpcError as exc:
            if exc.code == RPC_INVALID_ADDRESS_OR_KEY:
                return TxStatus(confirmations=0, known=False)
            raise
        confirmations = int(answer.get("confirmations", 0))
        if confirmations == 0 and not self._in_mempool(code, txid):
            return TxStatus(confirmations=0, known=False)
        block = None
        if confirmations > 0 and answer.get("blockhash"):
            block = BlockRef(int(answer.get("blockheight", 0)), str(answer["blockhash"]))
        return TxStatus(confirmations=confirmations, known=True, block=block)

    def _in_mempool(self, code: str, txid: str) -> bool:
        try:
            self._node(code).call("getmempoolentry", txid)
        except RpcError as exc:
            if exc.code == RPC_INVALID_ADDRESS_OR_KEY:
                return False
            raise
        return True

    def release(self, code: str, raw: str) -> None:
        """Unlock the inputs of a planned transaction that will never be sent (the node locked them)."""
        inputs = [
            {"txid": vin["txid"], "vout": vin["vout"]}
            for vin in self._node(code).call("decoderawtransaction", raw)["vin"]
        ]
        with contextlib.suppress(RpcError):  # not locked any more (the node restarted): nothing to release
            self._payouts(code).call("lockunspent", True, inputs)

    def spendable(self, code: str) -> Decimal:
        """The payout wallet's trusted balance (confirmed, and its own unconfirmed change)."""
        wallet = self._payouts(code)
        try:
            return Decimal(wallet.call("getbalances")["mine"]["trusted"])
        except RpcError as exc:
            if exc.code != RPC_METHOD_NOT_FOUND:
                raise
        return Decimal(wallet.call("getbalance"))

    def bump(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        """A replacement (BIP 125) paying at least `fee`, and at least the original's rate plus the
        increment a replacement must add, signed by the payout wallet. None where there can be none: BCH,
        a rate over the cap, a node that refuses to make it (not replaceable, already spent) or that would
        not relay it (litecoind without -mempoolreplacement=1), a wallet that cannot sign now."""
        if get_asset(code).family == "bch":
            return None
        rate = self._bump_rate(code, txid, fee)
        if rate is None:
            return None
        try:
            answer = self._payouts(code).call("psbtbumpfee", txid, {"fee_rate": rate})
            unsigned = UnsignedTx(
                code=code, payload=str(answer["psbt"]), payments=(), fee=Decimal(answer["fee"])
            )
            signed = self.signer(code).sign(unsigned)
        except (RpcError, PayoutHeld) as exc:
            logger.info("%s: no replacement for %s: %s", code, txid, exc)
            return None
        (verdict,) = self._node(code).call("testmempoolaccept", [signed.raw])
        if not verdict.get("allowed"):
            logger.info("%s: the node would not relay a replacement of %s: %s", code, txid, verdict)
            return None
        return signed

    def _bump_rate(self, code: str, txid: str, fee: FeeQuote) -> Decimal | None:
        """The replacement's rate in sat/vB (psbtbumpfee's unit since 0.21), or None over the cap."""
        node = self._node(code)
        try:
            original = self._payouts(code).call("gettransaction", txid)
        except RpcError:
            return None
        vsize = Decimal(node.call("decoderawtransaction", original["hex"])["vsize"])
        paid = -Decimal(original["fee"]) * 1000 / vsize
        increment = max(Decimal(node.call("getnetworkinfo").get("incrementalfee", 0)), WALLET_INCREMENTAL_FEE)
        rate = max(fee.rate, paid + increment)
        if rate > self._config(code).fee_cap:
            return None
        return (rate * SAT_PER_VB).quantize(Decimal("0.001"), rounding=ROUND_UP)


class WalletSigner:
    """Signs with the node's payout wallet (PSBT): the node holds the key, Kassa never sees it.

    An encrypted payout wallet signs only while the operator keeps it unlocked (`walletpassphrase`);
    Kassa holds no passphrase. Locked, it signs nothing (litecoind 0.21 answers without an error, the PSBT
    incomplete; newer nodes -13) and the withdrawals wait with PayoutWalletLocked.
    """

    def __init__(self, backend: NodeAccess, code: str) -> None:
        self._backend, self._code = backend, code

    def sign(self, tx: UnsignedTx) -> SignedTx:
        wallet = self._backend._payouts(self._code)
        node = self._backend._node(self._code)
        try:
            processed = wallet.call("walletprocesspsbt", tx.payload, True)
        except RpcError as exc:
            if exc.code == RPC_WALLET_UNLOCK_NEEDED:
                raise PayoutWalletLocked("unlock it with walletpassphrase") from exc
            raise
        final = node.call("finalizepsbt", processed["psbt"])
        if not final.get("complete"):
            if wallet.call("getwalletinfo").get("unlocked_until") == 0:
                raise PayoutWalletLocked("unlock it with walletpassphrase")
            raise PayoutWalletLocked("the node could not sign every input (a watch-only payout wallet?)")
        raw = str(final["hex"])
        txid = node.call("decoderawtransaction", raw)["txid"]
        return SignedTx(txid=str(txid), raw=raw, fee=tx.fee)

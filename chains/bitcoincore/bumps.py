"""Speeding up a stuck payout on a Bitcoin Core-family node: a replacement (RBF) where the mempool takes
one, else a child paying for its parent (CPFP). Both are signed by the payout wallet and returned to the
payout pipeline, which stores them before sending (withdrawals.payouts)."""

from __future__ import annotations

from decimal import ROUND_UP, Decimal
from typing import Any, Protocol

from chains.base import FeeQuote, SignedTx, Signer, UnsignedTx
from chains.bitcoincore.rpc import RPC_INVALID_ADDRESS_OR_KEY, SATOSHI, RpcError
from core.assets import DUST_LIMITS, get_asset


class Rpc(Protocol):
    def call(self, method: str, *params: Any) -> Any: ...


def replacement(node: Rpc, wallet: Rpc, signer: Signer, code: str, txid: str) -> SignedTx | None:
    """A replacement paying a higher fee (BIP 125; every payout is built replaceable), signed by the
    payout wallet; None where the node cannot make one (no psbtbumpfee, or it refuses) or its mempool
    would not accept it."""
    if get_asset(code).family == "bch":
        return None  # Bitcoin Cash has no replace-by-fee
    try:
        answer = wallet.call("psbtbumpfee", txid)
    except RpcError:
        return None
    unsigned = UnsignedTx(code=code, payload=str(answer["psbt"]), payments=(), fee=Decimal(answer["fee"]))
    signed = signer.sign(unsigned)
    # The wallet builds a replacement even where the node's mempool relays none (litecoind's default,
    # -mempoolreplacement=0): ask the mempool first, so such a node gets a child instead.
    (verdict,) = node.call("testmempoolaccept", [signed.raw])
    return signed if verdict.get("allowed") else None


def child(node: Rpc, wallet: Rpc, signer: Signer, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
    """CPFP: a child spending the stuck payout's change back to the payout wallet, paying
    `fee.rate` on its own size plus what the parent lacks at that rate, so miners selecting by package
    fee rate take both. None when the parent left the mempool, has no change, already pays the rate,
    or its change cannot pay the child's fee."""
    try:
        entry = node.call("getmempoolentry", txid)
    except RpcError as exc:
        if exc.code == RPC_INVALID_ADDRESS_OR_KEY:
            return None
        raise
    parent_fee = Decimal(str(entry["fees"]["base"] if "fees" in entry else entry["fee"]))
    parent_size = Decimal(int(entry.get("vsize") or entry["size"]))
    lacking = fee.rate * parent_size / 1000 - parent_fee  # coin per kvB times vB
    if lacking <= 0:
        return None  # it pays the rate already: a child would not move it
    change = [
        utxo
        for utxo in wallet.call("listunspent", 0, 0)
        if utxo["txid"] == txid and utxo.get("spendable", True)
    ]
    if not change:
        return None
    utxo = max(change, key=lambda row: Decimal(str(row["amount"])))
    value = Decimal(str(utxo["amount"]))
    outpoint = [{"txid": txid, "vout": utxo["vout"]}]
    to = wallet.call("getrawchangeaddress")
    # The node's fee for this one-input, one-output child at the rate: the child's own share.
    alone = wallet.call(
        "walletcreatefundedpsbt",
        outpoint,
        [{to: value}],
        0,
        {"feeRate": fee.rate, "subtractFeeFromOutputs": [0]},
    )
    child_fee = (Decimal(str(alone["fee"])) + lacking).quantize(SATOSHI, rounding=ROUND_UP)
    if value - child_fee < DUST_LIMITS[get_asset(code).family]:
        return None  # the change cannot pay for the pair
    psbt = node.call("createpsbt", outpoint, [{to: value - child_fee}], 0)
    return signer.sign(UnsignedTx(code=code, payload=str(psbt), payments=(), fee=child_fee))

"""The `bitcoincore` backend: btc, ltc and bch on a Bitcoin Core-compatible node over JSON-RPC.

Custody (docs/decisions.md): deposit addresses are derived from the operator's account public key
(`CHAIN_XPUBS`) and watched by a watch-only wallet Kassa creates, loads and extends itself
(`deposit_wallet`); withdrawals are paid from the operator's `payout_wallet` in the same node (it may be
the same wallet), funded and, if encrypted, unlocked by the operator. Kassa holds no private key: the
node's wallet signs the PSBT Kassa plans.

- Watching: `importdescriptors` on a descriptor wallet, `importmulti` with a ranged descriptor on a legacy
  one (Debian's litecoind has no descriptor wallets), one address at a time where the node's importmulti
  takes no descriptor (Bitcoin Cash Node). Imported with timestamp "now" and no rescan: an address is
  handed out only after it is watched (chains.scanning keeps the range 1,000 ahead).
- Scanning: `listsinceblock(cursor, target_confirmations=<the asset's>)`; its `lastblock` is the block at
  that depth, so a transfer keeps coming back until it is credited. `removed` (a reorg) is rechecked with
  `gettransaction`: negative confirmations or an unknown transaction mean dropped.
- Settled watch (chains.settled): whether a block is still in the best chain is `getblockheader`'s
  confirmations (-1 on a branch the node left); a transaction's state is its wallet's `gettransaction`
  (0 confirmations and not in the mempool: gone, as after a reorganisation deeper than the node re-adds).
- Payouts: `walletcreatefundedpsbt` (fee rate from `estimatesmartfee`, BCH `estimatefee`, else the
  configured fallback; never below the node's relay minimum) -> `walletprocesspsbt` + `finalizepsbt` (the
  Signer) -> the caller stores the hex -> `sendrawtransaction`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from decimal import Decimal
from typing import Any

from bip_utils import Base58Decoder, Base58Encoder
from django.conf import settings

from chains.backend import ChainBackend, XpubAddressesMixin
from chains.base import (
    DROPPED,
    BlockRef,
    ChainTransfer,
    FeeQuote,
    InsufficientFunds,
    Outcome,
    Payment,
    PayoutHeld,
    PayoutWalletLocked,
    ScanResult,
    SignedTx,
    TransferKey,
    TxStatus,
    UnsignedTx,
)
from chains.bitcoincore import bumps
from chains.bitcoincore.config import FAMILIES, NodeConfig, node_config
from chains.bitcoincore.rpc import (
    RPC_INVALID_ADDRESS_OR_KEY,
    RPC_VERIFY_ALREADY_IN_CHAIN,
    RPC_VERIFY_ERROR,
    RPC_VERIFY_REJECTED,
    RPC_WALLET_ERROR,
    RPC_WALLET_INSUFFICIENT_FUNDS,
    RPC_WALLET_NOT_FOUND,
    RPC_WALLET_UNLOCK_NEEDED,
    SATOSHI,
    NodeUnavailable,
    RpcClient,
    RpcError,
)
from chains.derivation import derive_address, development_xpub
from chains.models import WatchRange
from core.assets import get_asset

logger = logging.getLogger(__name__)

IMPORT_CHUNK = 500
XPUB_VERSION, TPUB_VERSION = bytes.fromhex("0488b21e"), bytes.fromhex("043587cf")


class PayoutWalletMissing(PayoutHeld):
    kind = "payout_wallet_missing"
    reason = "The payout wallet is missing"


def _amount(value: Decimal) -> Decimal:
    """An exact amount in whole satoshis (validated upstream); a finer one is a bug, never rounded away."""
    exact = value.quantize(SATOSHI)
    if exact != value:
        raise ValueError(f"{value} has more than 8 decimal places")
    return exact


class BitcoinCoreBackend(XpubAddressesMixin, ChainBackend):
    name = "bitcoincore"
    families = FAMILIES
    watches_addresses = True  # a watch-only wallet sees only the addresses imported into it
    max_outputs = 500

    def __init__(self) -> None:
        self._clients: dict[str, RpcClient] = {}
        self._lock = threading.Lock()

    # --- plumbing ------------------------------------------------------------------------------------

    def _config(self, code: str) -> NodeConfig:
        return node_config(get_asset(code).code)

    def check_config(self, code: str) -> None:
        super().check_config(code)
        node_config(code)

    def _node(self, code: str) -> RpcClient:
        url = self._config(code).url
        with self._lock:
            if url not in self._clients:
                self._clients[url] = RpcClient(url)
            return self._clients[url]

    def _deposits(self, code: str) -> _Wallet:
        return _Wallet(self, code, self._config(code).deposit_wallet, create=True)

    def _payouts(self, code: str) -> _Wallet:
        return _Wallet(self, code, self._config(code).payout_wallet, create=False)

    def tip(self, code: str) -> BlockRef:
        info = self._node(code).call("getblockchaininfo")
        return BlockRef(int(info["blocks"]), str(info["bestblockhash"]))

    def cursor_at(self, code: str, height: int) -> dict[str, Any]:
        return {"hash": self._node(code).call("getblockhash", height)}

    def explorer_url(self, code: str, txid: str) -> str:
        """The asset's public explorer on mainnet; on a test network (no public explorer) the txid itself."""
        template = get_asset(code).explorer_tx_url
        return template.format(txid=txid) if self._config(code).network == "mainnet" and template else txid

    # --- watching --------------------------------------------------------------------------------------

    def ensure_watched(self, code: str, upto_index: int) -> int:
        wallet_name = self._config(code).deposit_wallet
        self._load_or_create(code, wallet_name)
        wallet = self._deposits(code)
        family = get_asset(code).family
        if family == "bch":
            # Bitcoin Cash Node's importmulti takes no descriptor: one address at a time, only the new ones.
            done = WatchRange.objects.filter(code=code).values_list("watched_until", flat=True).first()
            start = 0 if done is None else done + 1
            for first in range(start, upto_index + 1, IMPORT_CHUNK):
                last = min(first + IMPORT_CHUNK, upto_index + 1)
                requests = [
                    {
                        "scriptPubKey": {"address": derive_address(code, index)[0]},
                        "timestamp": "now",
                        "watchonly": True,
                    }
                    for index in range(first, last)
                ]
                _require_imported(wallet.call("importmulti", requests, {"rescan": False}))
            return upto_index
        key = descriptor_key((settings.CHAIN_XPUBS or {}).get(family) or development_xpub(family), code)
        descriptor = self._node(code).call("getdescriptorinfo", f"wpkh({key}/0/*)")["descriptor"]
        request = {"desc": descriptor, "range": [0, upto_index], "timestamp": "now"}
        if wallet.call("getwalletinfo").get("descriptors"):
            _require_imported(wallet.call("importdescriptors", [{**request, "active": False}]))
        else:
            _require_imported(wallet.call("importmulti", [{**request, "watchonly": True}], {"rescan": False}))
        return upto_index

    def _load_or_create(self, code: str, name: str, *, create: bool = True) -> None:
        """Load the wallet (a restarted node loads only wallets marked to load on start-up); create the
        watch-only deposit wallet when it does not exist; a missing payout wallet holds payouts."""
        node = self._node(code)
        if name in node.call("listwallets"):
            return
        try:
            node.call("loadwallet", name)
        except RpcError as exc:
            if exc.code != RPC_WALLET_NOT_FOUND:
                raise
            if not create:
                raise PayoutWalletMissing(f"the node has no wallet {name!r}; create and fund it") from exc
            self._create_deposit_wallet(code, name)

    def _create_deposit_wallet(self, code: str, name: str) -> None:
        """Watch-only and blank (no private key ever), loaded again whenever the node starts. A descriptor
        wallet where the node makes them (Bitcoin Core from 0.21, the only kind it creates from v26 on), a
        legacy one where it cannot (Debian's litecoind is built without the sqlite they need); Bitcoin Cash
        Node's createwallet takes only (name, disable_private_keys, blank)."""
        node = self._node(code)
        if get_asset(code).family == "bch":
            node.call("createwallet", name, True, True)
            return
        try:
            node.call("createwallet", name, True, True, "", False, True, True)
        except RpcError as exc:
            logger.info(
                "%s: the node makes no descriptor wallet (%s); creating a legacy one", code, exc.message
            )
            node.call("createwallet", name, True, True, "", False, False, True)

    # --- deposits --------------------------------------------------------------------------------------

    def scan(self, code: str, cursor: dict[str, Any] | None) -> ScanResult:
        wallet = self._deposits(code)
        since = (cursor or {}).get("hash", "")
        needed = get_asset(code).confirmations
        answer = wallet.call("listsinceblock", since, needed, True, True)
        tip = self.tip(code)
        transfers = [
            transfer
            for entry in answer.get("transactions", [])
            if (transfer := self._transfer(code, entry, tip)) is not None
        ]
        dropped = [
            TransferKey(code, str(entry["txid"]), int(entry["vout"]))
            for entry in answer.get("removed", [])
            if entry.get("category") == "receive"
        ]
        return ScanResult(transfers=transfers, dropped=dropped, tip=tip, cursor={"hash": answer["lastblock"]})

    def _transfer(self, code: str, entry: dict[str, Any], tip: BlockRef) -> ChainTransfer | None:
        if entry.get("category") != "receive" or "address" not in entry:
            return None
        confirmations = int(entry.get("confirmations", 0))
        block = None
        if confirmations > 0 and entry.get("blockhash"):
            height = entry.get("blockheight", tip.height - confirmations + 1)
            block = BlockRef(int(height), str(entry["blockhash"]))
        return ChainTransfer(
            code=code,
            txid=str(entry["txid"]),
            output_index=int(entry["vout"]),
            address=str(entry["address"]),
            tag="",
            amount=Decimal(entry["amount"]),
            confirmations=max(confirmations, 0),
            state=DROPPED if confirmations < 0 else "pending",
            block=block,
        )

    def recheck(self, code: str, keys: list[TransferKey]) -> list[ChainTransfer]:
        wallet = self._deposits(code)
        tip = self.tip(code)
        found: list[ChainTransfer] = []
        for key in keys:
            try:
                answer = wallet.call("gettransaction", key.txid, True)
            except RpcError as exc:
                if exc.code != RPC_INVALID_ADDRESS_OR_KEY:
                    raise
                found.append(_gone(key))
                continue
            entry = next(
                (
                    {**detail, **answer, "address": detail.get("address"), "amount": detail["amount"]}
                    for detail in answer.get("details", [])
                    if detail.get("category") == "receive" and int(detail.get("vout", -1)) == key.output_index
                ),
                None,
            )
            transfer = (
                None if entry is None else self._transfer(code, {**entry, "vout": key.output_index}, tip)
            )
            found.append(transfer or _gone(key))
        return found

    # --- payouts ---------------------------------------------------------------------------------------

    def quote_fee(self, code: str) -> FeeQuote:
        config = self._config(code)
        node = self._node(code)
        unit = f"{code}/kvB"
        if get_asset(code).family == "bch":
            estimate = node.call("estimatefee")
            rate, source = (Decimal(estimate), "estimatefee") if Decimal(estimate) > 0 else (None, "")
        else:
            answer = node.call("estimatesmartfee", config.fee_target_blocks, "ECONOMICAL")
            rate, source = (
                (Decimal(answer["feerate"]), "estimatesmartfee") if "feerate" in answer else (None, "")
            )
        if rate is None:
            rate, source = config.fee_fallback, "fallback"
        floor = Decimal(node.call("getmempoolinfo").get("mempoolminfee", 0))
        rate = max(rate, floor)
        return FeeQuote(rate=rate, unit=unit, source=source, over_cap=rate > config.fee_cap)

    def build(self, code: str, payments: list[Payment], fee: FeeQuote) -> UnsignedTx:
        totals: dict[str, Decimal] = {}
        for payment in payments:  # a node refuses one address twice in a transaction: pay it the sum
            totals[payment.to] = totals.get(payment.to, Decimal(0)) + _amount(payment.amount)
        outputs = [{address: amount} for address, amount in totals.items()]
        options = {"feeRate": fee.rate, "replaceable": True, "lockUnspents": True}
        try:
            answer = self._payouts(code).call("walletcreatefundedpsbt", [], outputs, 0, options)
        except RpcError as exc:
            if exc.code == RPC_WALLET_INSUFFICIENT_FUNDS or "nsufficient funds" in exc.message:
                raise InsufficientFunds(
                    f"{sum(totals.values(), Decimal(0))} {code} to pay; the node says: {exc.message}"
                ) from exc
            raise
        return UnsignedTx(code=code, payload=str(answer["psbt"]), payments=tuple(payments), fee=answer["fee"])

    def signer(self, code: str) -> WalletSigner:
        return WalletSigner(self, code)

    def broadcast(self, code: str, tx: SignedTx) -> Outcome:
        node = self._node(code)
        try:
            node.call("sendrawtransaction", tx.raw)
        except NodeUnavailable:
            return Outcome.UNAVAILABLE
        except RpcError as exc:
            text = exc.message.lower()
            if "already in block chain" in text or exc.code == RPC_VERIFY_ALREADY_IN_CHAIN:
                return Outcome.ALREADY_MINED if "mempool" not in text else Outcome.ALREADY_KNOWN
            if "already-in-mempool" in text or "already known" in text:
                return Outcome.ALREADY_KNOWN
            if exc.code in (RPC_VERIFY_REJECTED, RPC_VERIFY_ERROR) and self._mined(code, tx.txid):
                return Outcome.ALREADY_MINED
            if "conflict" in text or "missingorspent" in text or "missing inputs" in text:
                return Outcome.CONFLICT
            return Outcome.REJECTED
        return Outcome.ACCEPTED

    def _mined(self, code: str, txid: str) -> bool:
        try:
            return int(self._payouts(code).call("gettransaction", txid).get("confirmations", 0)) > 0
        except RpcError:
            return False

    def tx_status(self, code: str, txid: str) -> TxStatus:
        return self._wallet_status(code, self._payouts(code), txid)

    def deposit_status(self, code: str, txid: str) -> TxStatus:
        return self._wallet_status(code, self._deposits(code), txid)

    def in_best_chain(self, code: str, block: BlockRef) -> bool:
        try:
            header = self._node(code).call("getblockheader", block.hash)
        except RpcError as exc:
            if exc.code == RPC_INVALID_ADDRESS_OR_KEY:
                return False  # a block the node never had (or pruned from its index)
            raise
        return int(header.get("confirmations", -1)) > 0  # -1: on a branch the node left

    def _wallet_status(self, code: str, wallet: _Wallet, txid: str) -> TxStatus:
        """A transaction of `wallet` (the payout wallet's own, or one the deposit wallet watches): a reorg
        that disconnected it leaves it at 0 confirmations, in the mempool or not."""
        try:
            answer = wallet.call("gettransaction", txid, True)
        except RpcError as exc:
            if exc.code == RPC_INVALID_ADDRESS_OR_KEY:
                return TxStatus(confirmations=0, known=False)
            raise
        confirmations = int(answer.get("confirmations", 0))
        if confirmations == 0 and not self._in_mempool(code, txid):
            return TxStatus(confirmations=0, known=False)  # dropped from the mempool: send it again
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
        return Decimal(self._payouts(code).call("getbalances")["mine"]["trusted"])

    def bump(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        return bumps.replacement(self._node(code), self._payouts(code), self.signer(code), code, txid)

    def child(self, code: str, txid: str, fee: FeeQuote) -> SignedTx | None:
        return bumps.child(self._node(code), self._payouts(code), self.signer(code), code, txid, fee)


class _Wallet:
    """Calls to one node wallet; a wallet the node has not loaded (it restarted) is loaded and the call
    made again."""

    def __init__(self, backend: BitcoinCoreBackend, code: str, name: str, *, create: bool) -> None:
        self._backend, self._code, self._name, self._create = backend, code, name, create

    def call(self, method: str, *params: Any) -> Any:
        client = self._backend._node(self._code).wallet(self._name)
        try:
            return client.call(method, *params)
        except RpcError as exc:
            if exc.code != RPC_WALLET_NOT_FOUND:
                raise
        self._backend._load_or_create(self._code, self._name, create=self._create)
        return client.call(method, *params)


class WalletSigner:
    """Signs with the node's payout wallet (PSBT): the node holds the key, Kassa never sees it."""

    def __init__(self, backend: BitcoinCoreBackend, code: str) -> None:
        self._backend, self._code = backend, code

    def sign(self, tx: UnsignedTx) -> SignedTx:
        wallet = self._backend._payouts(self._code)
        try:
            processed = wallet.call("walletprocesspsbt", tx.payload, True)
        except RpcError as exc:
            if exc.code == RPC_WALLET_UNLOCK_NEEDED:
                raise PayoutWalletLocked("unlock it with walletpassphrase") from exc
            raise
        final = self._backend._node(self._code).call("finalizepsbt", processed["psbt"])
        if not final.get("complete"):
            raise PayoutWalletLocked("the node could not sign every input (a locked or watch-only wallet?)")
        raw = str(final["hex"])
        txid = self._backend._node(self._code).call("decoderawtransaction", raw)["txid"]
        return SignedTx(txid=str(txid), raw=raw, fee=tx.fee)


def descriptor_key(key: str, code: str) -> str:
    """The account key as a node's descriptor reads it: only xpub (mainnet) and tpub (test networks) are
    accepted there, so a zpub, Ltub or vpub is re-encoded with those version bytes (same key, same
    addresses; the script type comes from the descriptor)."""
    payload = Base58Decoder.CheckDecode(key.strip())
    version = XPUB_VERSION if node_config(code).network == "mainnet" else TPUB_VERSION
    return Base58Encoder.CheckEncode(version + payload[4:])


def _require_imported(results: list[dict[str, Any]]) -> None:
    failed = [result for result in results if not result.get("success")]
    if failed:
        raise RpcError("import", RPC_WALLET_ERROR, str(failed[0].get("error", failed[0]))[:300])


def _gone(key: TransferKey) -> ChainTransfer:
    return ChainTransfer(key.code, key.txid, key.output_index, "", "", Decimal(1), 0, state=DROPPED)

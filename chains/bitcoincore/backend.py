"""The `bitcoincore` backend: btc, ltc and bch on a Bitcoin Core-compatible node over JSON-RPC.

Custody (docs/decisions.md): deposit addresses are derived from the operator's account public key
(`CHAIN_XPUBS`) and watched by a watch-only wallet Kassa creates, loads and extends itself
(`deposit_wallet`); withdrawals are paid from the operator's `payout_wallet` in the same node (it may be
the same wallet), funded and, if encrypted, unlocked by the operator. Kassa holds no private key: the
node's wallet signs the PSBT Kassa plans.

- Watching: `importdescriptors` on a descriptor wallet, `importmulti` with a ranged descriptor on a legacy
  one (Debian's litecoind has no descriptor wallets), one address at a time where the node's importmulti
  takes no descriptor (Bitcoin Cash Node). Imported with timestamp "now" and no rescan: an address is
  handed out only after it is watched (chains.scanning keeps the range 1,000 ahead). Only the indexes not
  watched yet are imported (a descriptor wallet takes the whole range again: it only grows); a deposit
  wallet created anew, or one that no longer watches the last watched index, gets the whole range again.
  The descriptor's key is the configured one re-encoded as the node reads it (xpub on mainnet, tpub on a
  test network: a zpub or vpub carries the same key), and the node's first address must be Kassa's.
- Scanning: `listsinceblock(cursor, target_confirmations=<the asset's>)`; its `lastblock` is the block at
  that depth, so a transfer keeps coming back until it is credited. `removed` (a reorg) is rechecked with
  `gettransaction`: negative confirmations or an unknown transaction mean dropped.
- Payouts (chains.bitcoincore.payouts): `walletcreatefundedpsbt` (fee rate from `estimatesmartfee`, BCH
  `estimatefee`, else the configured fallback; never below the node's relay minimum) -> `walletprocesspsbt`
  + `finalizepsbt` (the Signer) -> the caller stores the hex -> `sendrawtransaction`.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from bip_utils.base58 import Base58Decoder, Base58Encoder
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from chains.base import (
    DROPPED,
    PENDING,
    BlockRef,
    ChainTransfer,
    ScanResult,
    TransferKey,
    XpubAddressesMixin,
)
from chains.bitcoincore.payouts import BitcoinCorePayouts, WalletSigner
from chains.bitcoincore.rpc import RpcError
from chains.bitcoincore.wallet import RPC_INVALID_ADDRESS_OR_KEY, RPC_WALLET_ERROR, PayoutWalletMissing
from chains.derivation import derive_address, development_xpub
from chains.models import WatchRange
from payments.assets import get_asset

__all__ = ["BitcoinCoreBackend", "PayoutWalletMissing", "WalletSigner"]

IMPORT_CHUNK = 500  # addresses per importmulti call, one by one (BCH)
RANGE_CHUNK = 100_000  # indexes per ranged import (a node refuses a range of a million)
# The extended public key versions a node's descriptors take: xpub on mainnet, tpub on test networks.
_DESCRIPTOR_VERSIONS = {"mainnet": bytes.fromhex("0488b21e"), "testnet": bytes.fromhex("043587cf")}


class BitcoinCoreBackend(XpubAddressesMixin, BitcoinCorePayouts):
    name = "bitcoincore"

    def tip(self, code: str) -> BlockRef:
        info = self._node(code).call("getblockchaininfo")
        return BlockRef(int(info["blocks"]), str(info["bestblockhash"]))

    def cursor_at(self, code: str, height: int) -> dict[str, Any]:
        return {"hash": self._node(code).call("getblockhash", height)}

    def explorer_url(self, code: str, txid: str) -> str:
        """The asset's public explorer on mainnet; on a test network (no public explorer) the txid itself."""
        template = get_asset(code).explorer_tx_url
        return template.format(txid=txid) if self._config(code).network == "mainnet" and template else txid

    def poll(self, code: str) -> None:
        raise NotImplementedError(
            "the bitcoincore backend has no poll: chains.scanning calls scan and recheck on the node"
        )

    # --- watching --------------------------------------------------------------------------------------

    def ensure_watched(self, code: str, upto_index: int) -> int:
        """Watch every deposit address up to `upto_index`; returns the highest index watched now."""
        self._load_or_create(code, self._config(code).deposit_wallet)  # a new one is caught up by _created
        done = _watched_until(code)
        if done >= 0 and not self._watches(code, done):
            done = -1  # the wallet was replaced behind Kassa's back (restored, recreated): all again
        if upto_index > done:
            self._import(code, done + 1, upto_index)
        return max(upto_index, done)

    def _created(self, code: str) -> None:
        done = _watched_until(code)
        if done >= 0:
            self._import(code, 0, done)

    def _watches(self, code: str, index: int) -> bool:
        info = self._deposits(code).call("getaddressinfo", derive_address(code, index)[0])
        return bool(info.get("ismine") or info.get("iswatchonly"))

    def _import(self, code: str, first: int, last: int) -> None:
        wallet = self._deposits(code)
        if get_asset(code).family == "bch":
            # Bitcoin Cash Node's importmulti takes no descriptor: one address at a time.
            for start in range(first, last + 1, IMPORT_CHUNK):
                requests = [
                    {
                        "scriptPubKey": {"address": derive_address(code, index)[0]},
                        "timestamp": "now",
                        "watchonly": True,
                    }
                    for index in range(start, min(start + IMPORT_CHUNK, last + 1))
                ]
                _require_imported(wallet.call("importmulti", requests, {"rescan": False}))
            return
        descriptor = self._descriptor(code)
        ranged = bool(wallet.call("getwalletinfo").get("descriptors"))
        for start in range(first, last + 1, RANGE_CHUNK):
            end = min(start + RANGE_CHUNK - 1, last)
            if ranged:  # a descriptor's range only grows: it is imported again from 0
                request = {"desc": descriptor, "range": [0, end], "timestamp": "now", "active": False}
                _require_imported(wallet.call("importdescriptors", [request]))
            else:
                request = {"desc": descriptor, "range": [start, end], "timestamp": "now", "watchonly": True}
                _require_imported(wallet.call("importmulti", [request], {"rescan": False}))

    def _descriptor(self, code: str) -> str:
        """`wpkh(<account key>/0/*)` with its checksum, checked to give the node Kassa's first address."""
        family = get_asset(code).family
        expected = derive_address(code, 0)[0]  # also refuses a malformed or foreign key, with the reason
        key = ((settings.CHAIN_XPUBS or {}).get(family) or development_xpub(family)).strip()
        version = _DESCRIPTOR_VERSIONS.get(self._config(code).network, _DESCRIPTOR_VERSIONS["testnet"])
        node_key = Base58Encoder.CheckEncode(version + Base58Decoder.CheckDecode(key)[4:])
        node = self._node(code)
        descriptor = str(node.call("getdescriptorinfo", f"wpkh({node_key}/0/*)")["descriptor"])
        (first,) = node.call("deriveaddresses", descriptor, [0, 0])
        if first != expected:
            raise ImproperlyConfigured(
                f"CHAIN_XPUBS[{family!r}]: the {code} node derives {first} as deposit address 0, Kassa "
                f"{expected}; check the node's network"
            )
        return descriptor

    # --- deposits --------------------------------------------------------------------------------------

    def scan(self, code: str, cursor: dict[str, Any] | None) -> ScanResult:
        wallet = self._deposits(code)
        since = (cursor or {}).get("hash") or ""
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
            return None  # sends, coinbase ("generate", "immature", "orphan")
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
            state=DROPPED if confirmations < 0 else PENDING,
            block=block,
        )

    def recheck(self, code: str, keys: list[TransferKey]) -> list[ChainTransfer]:
        """One transfer per key: its confirmations now, or DROPPED when a conflicting transaction was mined,
        the wallet does not know the transaction, or it pays the wallet nothing at that output."""
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


def _watched_until(code: str) -> int:
    done = WatchRange.objects.filter(code=code).values_list("watched_until", flat=True).first()
    return -1 if done is None else int(done)


def _require_imported(results: list[dict[str, Any]]) -> None:
    failed = [result for result in results if not result.get("success")]
    if failed:
        raise RpcError("import", RPC_WALLET_ERROR, str(failed[0].get("error", failed[0]))[:300])


def _gone(key: TransferKey) -> ChainTransfer:
    return ChainTransfer(key.code, key.txid, key.output_index, "", "", Decimal(1), 0, state=DROPPED)

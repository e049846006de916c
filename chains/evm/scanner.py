"""Deposits on an EVM chain: blocks and token logs after the cursor, reorgs rewound, open transfers
rechecked (see chains.evm.backend for the whole backend)."""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

from eth_typing import HexStr
from web3 import Web3
from web3.exceptions import BlockNotFound, TransactionNotFound, Web3Exception

from chains.base import DROPPED, FAILED, PENDING, BlockRef, ChainTransfer, ScanResult, TransferKey
from chains.evm.config import EvmConfig, evm_config
from chains.evm.node import ERC20, TRANSFER_TOPIC, EvmNode, from_units
from core.assets import all_assets, get_asset
from payments.models import Deposit, DepositAddress

logger = logging.getLogger(__name__)

KEEP_BLOCKS = 64  # block hashes kept in the cursor: a reorg deeper than this is rescanned from its bottom
SCAN_BLOCKS = 500  # blocks per scan at most; `more` says there is more
FIRST_SCAN_BLOCKS = 128  # a chain never scanned starts this far below its tip
LOG_ADDRESS_CHUNK = 1000  # recipient topics per eth_getLogs; past this many addresses, contract-wide


class EvmScanner(EvmNode):
    def scan(self, code: str, cursor: dict[str, Any] | None) -> ScanResult:
        codes = self.scan_codes(code)
        with self._node(code) as w3:
            tip = w3.eth.get_block("latest")
            tip_ref = BlockRef(int(tip["number"]), Web3.to_hex(tip["hash"]))
            if cursor is None:
                cursor = self.cursor_at(code, tip_ref.height - FIRST_SCAN_BLOCKS)
            start = self._fork(w3, cursor) + 1
            # A reorg: what was recorded above the fork is rechecked, confirmed deposits included (one the
            # chain no longer holds raises an alert for a person; it is never debited by itself).
            rewound = _recorded_above(codes, start - 1) if start <= int(cursor.get("height", -1)) else []
            end = min(tip_ref.height, start + SCAN_BLOCKS - 1)
            transfers: list[ChainTransfer] = []
            hashes: dict[int, str] = {}
            headers = self._blocks(w3, start, end, full=any(evm_config(c).contract is None for c in codes))
            for block in headers:
                hashes[int(block["number"])] = Web3.to_hex(block["hash"])
            watched = _watched() if headers else set()  # no new block: nothing to match, no query
            for token_code in codes:
                config = evm_config(token_code)
                if config.contract is None:
                    transfers += self._native(w3, config, headers, watched, tip_ref.height)
                else:
                    transfers += self._tokens(w3, config, start, end, watched, tip_ref.height, hashes)
        kept = [[h, x] for h, x in cursor.get("blocks", []) if h < start] + [
            [h, hashes[h]] for h in sorted(hashes)
        ]
        new_cursor = {"height": end if end >= start else start - 1, "blocks": kept[-KEEP_BLOCKS:]}
        return ScanResult(
            transfers=transfers, dropped=rewound, tip=tip_ref, cursor=new_cursor, more=end < tip_ref.height
        )

    def _fork(self, w3: Web3, cursor: dict[str, Any]) -> int:
        """The height the chain still agrees with the cursor up to (a reorg rewinds below the cursor)."""
        height = int(cursor.get("height", -1))
        blocks = cursor.get("blocks") or []
        if not blocks:
            return height
        for stored_height, stored_hash in reversed(blocks):
            try:
                block = w3.eth.get_block(stored_height)
            except BlockNotFound:
                continue  # the new branch is shorter: this height is gone too
            if Web3.to_hex(block["hash"]) == stored_hash:
                if stored_height < height:
                    logger.warning(
                        "evm: reorg below height %s; rescanning from %s", height, stored_height + 1
                    )
                return int(stored_height) if stored_height < height else height
        logger.warning(
            "evm: reorg deeper than the %s kept blocks; rescanning from %s", len(blocks), blocks[0][0]
        )
        return int(blocks[0][0]) - 1

    def _blocks(self, w3: Web3, start: int, end: int, *, full: bool) -> list[Any]:
        return [w3.eth.get_block(height, full_transactions=full) for height in range(start, end + 1)]

    def _native(
        self, w3: Web3, config: EvmConfig, blocks: list[Any], watched: set[str], tip: int
    ) -> list[ChainTransfer]:
        found: list[ChainTransfer] = []
        for block in blocks:
            matches = [
                tx
                for tx in block["transactions"]
                if tx["to"] and tx["to"].lower() in watched and tx["value"] > 0
            ]
            if not matches:
                continue
            ok = self._succeeded(w3, block, [Web3.to_hex(tx["hash"]) for tx in matches])
            ref = BlockRef(int(block["number"]), Web3.to_hex(block["hash"]))
            found += [
                self._native_transfer(config, tx, ref, tip)
                for tx in matches
                if ok.get(Web3.to_hex(tx["hash"]), False)
            ]
        return found

    def _native_transfer(self, config: EvmConfig, tx: Any, block: BlockRef | None, tip: int) -> ChainTransfer:
        asset = get_asset(config.code)
        return ChainTransfer(
            code=config.code,
            txid=Web3.to_hex(tx["hash"]),
            output_index=0,
            address=str(tx["to"]),
            tag="",
            amount=from_units(int(tx["value"]), 18, asset.chain_decimals),
            confirmations=0 if block is None else tip - block.height + 1,
            from_address=str(tx["from"]),
            block=block,
        )

    def _succeeded(self, w3: Web3, block: Any, txids: list[str]) -> dict[str, bool]:
        """txid -> status 1, from the block's receipts (eth_getBlockReceipts), else one receipt at a time."""
        url = str(getattr(w3.provider, "endpoint_uri", id(w3.provider)))
        if self._receipts_by_block.get(url, True):
            try:
                receipts = w3.eth.get_block_receipts(block["number"])
            except (Web3Exception, ValueError, NotImplementedError):
                self._receipts_by_block[url] = False
                logger.info("evm: the node has no eth_getBlockReceipts; receipts are read one by one")
            else:
                wanted = set(txids)
                return {
                    Web3.to_hex(r["transactionHash"]): r["status"] == 1
                    for r in receipts
                    if Web3.to_hex(r["transactionHash"]) in wanted
                }
        return {txid: w3.eth.get_transaction_receipt(HexStr(txid))["status"] == 1 for txid in txids}

    def _tokens(
        self,
        w3: Web3,
        config: EvmConfig,
        start: int,
        end: int,
        watched: set[str],
        tip: int,
        hashes: dict[int, str],
    ) -> list[ChainTransfer]:
        if end < start:
            return []
        if len(watched) > LOG_ADDRESS_CHUNK:
            recipients: list[list[str] | None] = [None]
        else:
            ordered = sorted(watched)
            recipients = [
                ordered[i : i + LOG_ADDRESS_CHUNK] for i in range(0, len(ordered), LOG_ADDRESS_CHUNK)
            ]
        logs: list[Any] = []
        for chunk in recipients:
            if chunk == []:
                continue
            topics: list[Any] = [TRANSFER_TOPIC, None]
            if chunk is not None:
                topics.append(["0x" + "00" * 12 + a[2:] for a in chunk])
            logs += self._logs(w3, config.contract or "", topics, start, end)
        ours = [
            log
            for log in logs
            if not log.get("removed")
            and len(log["topics"]) == 3
            and Web3.to_hex(log["topics"][2][-20:]) in watched  # the recipient
        ]
        # Receipts only for the transactions that pay us (contract-wide, most logs are someone else's).
        positions = self._log_positions(w3, {Web3.to_hex(log["transactionHash"]) for log in ours})
        found = []
        for log in ours:
            height = int(log["blockNumber"])
            block = BlockRef(height, hashes.get(height) or Web3.to_hex(log["blockHash"]))
            transfer = self._token_transfer(config, log, positions, block, tip)
            # Zero-value transfers (address-poisoning spam) and dust below the asset's places move nothing.
            if transfer.amount > 0:
                found.append(transfer)
        return found

    def _token_transfer(
        self, config: EvmConfig, log: Any, positions: dict[tuple[str, int], int], block: BlockRef, tip: int
    ) -> ChainTransfer:
        txid = Web3.to_hex(log["transactionHash"])
        event = ERC20.events.Transfer().process_log(log)["args"]
        return ChainTransfer(
            code=config.code,
            txid=txid,
            output_index=positions[(txid, int(log["logIndex"]))],
            address=event["to"],
            tag="",
            amount=from_units(int(event["value"]), config.decimals, get_asset(config.code).chain_decimals),
            confirmations=tip - block.height + 1,
            from_address=event["from"],
            block=block,
        )

    def _log_positions(self, w3: Web3, txids: set[str]) -> dict[tuple[str, int], int]:
        """(txid, block-wide log index) -> position among the transaction's own logs."""
        positions: dict[tuple[str, int], int] = {}
        for txid in txids:
            receipt = w3.eth.get_transaction_receipt(HexStr(txid))
            for position, log in enumerate(receipt["logs"]):
                positions[(txid, int(log["logIndex"]))] = position
        return positions

    def _logs(self, w3: Web3, contract: str, topics: list[Any], start: int, end: int) -> list[Any]:
        """eth_getLogs over start..end, the range halved while the node refuses it as too large."""
        query = {
            "fromBlock": start,
            "toBlock": end,
            "address": Web3.to_checksum_address(contract),
            "topics": topics,
        }
        try:
            return list(w3.eth.get_logs(query))  # type: ignore[arg-type]
        except (Web3Exception, ValueError) as exc:
            if end <= start or not _too_large(exc):
                raise
        middle = (start + end) // 2
        return self._logs(w3, contract, topics, start, middle) + self._logs(
            w3, contract, topics, middle + 1, end
        )

    def recheck(self, code: str, keys: list[TransferKey]) -> list[ChainTransfer]:
        config = evm_config(code)
        with self._node(code) as w3:
            tip = int(w3.eth.block_number)
            return [self._recheck(w3, config, key, tip) for key in keys]

    def _recheck(self, w3: Web3, config: EvmConfig, key: TransferKey, tip: int) -> ChainTransfer:
        gone = _state_of(key, DROPPED)
        try:
            receipt = w3.eth.get_transaction_receipt(HexStr(key.txid))
        except TransactionNotFound:
            receipt = None
        if receipt is None:
            try:
                pending = w3.eth.get_transaction(HexStr(key.txid))
            except TransactionNotFound:
                return gone  # neither mined nor waiting: a reorg took it and no node has it any more
            if config.contract is None:
                return self._native_transfer(config, pending, None, tip)
            # A token transfer back in the mempool: open, at 0 confirmations, until it is mined again.
            return _state_of(key, PENDING)
        block = BlockRef(int(receipt["blockNumber"]), Web3.to_hex(receipt["blockHash"]))
        if receipt["status"] != 1:
            return _state_of(key, FAILED)
        if config.contract is None:
            return self._native_transfer(config, w3.eth.get_transaction(HexStr(key.txid)), block, tip)
        logs = receipt["logs"]
        if key.output_index >= len(logs):
            return gone
        log = logs[key.output_index]
        positions = {(key.txid, int(log["logIndex"])): key.output_index}
        return self._token_transfer(config, log, positions, block, tip)


def _state_of(key: TransferKey, state: str) -> ChainTransfer:
    """What a recheck says of a recorded transfer when only its state matters (at 0 confirmations)."""
    return ChainTransfer(key.code, key.txid, key.output_index, "", "", Decimal(0), 0, state=state)


def _watched() -> set[str]:
    """Every EVM deposit address handed out (one key serves the four codes), lowercase."""
    codes = [asset.code for asset in all_assets() if asset.family == "evm"]
    return set(DepositAddress.objects.filter(code__in=codes).values_list("route_key", flat=True))


def _recorded_above(codes: list[str], height: int) -> list[TransferKey]:
    rows = Deposit.objects.filter(code__in=codes, block_height__gt=height).values_list(
        "code", "txid", "output_index"
    )
    return [TransferKey(*row) for row in rows]


def _too_large(exc: Exception) -> bool:
    """A node's or provider's refusal of a log query as too large (Infura: "query returned more than 10000
    results", -32005; Alchemy: "Log response size exceeded"; others: "block range", "limit")."""
    text = str(exc).lower()
    return "-32005" in text or any(
        word in text for word in ("more than", "too many", "limit", "range", "exceed", "too large")
    )

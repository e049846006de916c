"""Deposits on TRON: blocks after the cursor read with their receipts, forks rewound, open transfers
rechecked by id (see chains.tron.backend for the whole backend).

- A block is read whole (`getblockbynum`): trx deposits are its `TransferContract`s to a deposit address
  whose `contractRet` is SUCCESS. When TRC-20 codes are configured, its receipts too
  (`gettransactioninfobyblocknum`): token deposits are the `Transfer` logs of a configured contract to a
  deposit address in a SUCCESS receipt, whoever made the call (a wallet's transfer, an exchange's
  contract). REVERT, OUT_OF_ENERGY and every FAILED transaction credit nothing.
- Finality is the chain's: a transfer is `final` once its block is at or below the node's solidified
  block (`getnodeinfo.solidityBlock`), which never rolls back. Until then it is seen, not credited.
- The cursor keeps the last `KEEP_BLOCKS` block ids: a stored id the node no longer has is a fork, and
  the scan resumes above the last block both agree on (as the EVM scanner does). It also keeps the
  expiration of each transfer it reported: a transaction the chain no longer holds may still be included
  (again) until its expiration passes the head block's time, so a recheck says DROPPED only after that.
- A transaction of a kind that pays (TransferContract, TriggerSmartContract) whose bytes Kassa cannot
  read fully raises an alert: it may be a deposit, and it is never passed over in silence.
"""

from __future__ import annotations

import logging
from decimal import ROUND_DOWN, Decimal
from typing import Any

from alerts.services import alert_raise
from chains.base import DROPPED, FAILED, PENDING, BlockRef, ChainTransfer, ScanResult, TransferKey, TxStatus
from chains.models import ChainCursor
from chains.tron.config import TronConfig, scanned_codes, tron_config
from chains.tron.node import TronNode
from chains.tron.proto import TransferContract
from chains.tron.results import Block, NodeInfo, NodeTransaction, TransactionInfo
from chains.tron.units import from_units
from core.assets import all_assets, get_asset
from core.money import quantize
from payments.models import Deposit, DepositAddress

logger = logging.getLogger(__name__)

KEEP_BLOCKS = 64  # block ids kept in the cursor; a block is solid 19 behind the head and never forks
SCAN_BLOCKS = 200  # blocks per scan at most; `more` says there is more
FIRST_SCAN_BLOCKS = 100  # a chain never scanned starts this far below its tip
SUCCESS = "SUCCESS"
PAYING_KINDS = ("TransferContract", "TriggerSmartContract")


class TronScanner:
    def __init__(self) -> None:
        self._nodes: dict[tuple[str, str | None, str | None], TronNode] = {}

    def node(self, code: str) -> TronNode:
        config = tron_config(code)
        key = (config.url, config.solidity_url, config.api_key)
        if key not in self._nodes:
            self._nodes[key] = TronNode(config.url, solidity_url=config.solidity_url, api_key=config.api_key)
        return self._nodes[key]

    def scan_codes(self, code: str) -> list[str]:
        return scanned_codes() if code in scanned_codes() else [code]

    def tip(self, code: str) -> BlockRef:
        head = self.node(code).node_info().head
        return BlockRef(head.height, head.block_id)

    def final_height(self, code: str) -> int:
        return self.node(code).node_info().solid.height

    def cursor_at(self, code: str, height: int) -> dict[str, Any]:
        return {"height": max(height, -1), "blocks": [], "expires": {}}

    # --- scanning ------------------------------------------------------------------------------------

    def scan(self, code: str, cursor: dict[str, Any] | None) -> ScanResult:
        codes = self.scan_codes(code)
        configs = [tron_config(each) for each in codes]
        node = self.node(code)
        info = node.node_info()
        tip = BlockRef(info.head.height, info.head.block_id)
        if cursor is None:
            cursor = self.cursor_at(code, tip.height - FIRST_SCAN_BLOCKS)
        height = int(cursor.get("height", -1))
        agreed, following = self._fork(node, cursor, info)
        start = agreed + 1
        # A fork: what was recorded above it is rechecked (one the chain no longer holds is dropped once
        # its expiration has passed; a credited one is solid and cannot be there).
        rewound = _recorded_above(codes, start - 1) if start <= height else []
        parent = dict(cursor.get("blocks", [])).get(start - 1)
        watched = _watched() if tip.height >= start else set()
        transfers: list[ChainTransfer] = []
        hashes: dict[int, str] = {}
        expires = dict(cursor.get("expires", {}))
        head_time = 0
        for number in range(start, min(tip.height, start + SCAN_BLOCKS - 1) + 1):
            block = following if following is not None and number == start else node.block(number)
            if block is None or (parent is not None and block.parent_id != parent):
                break  # the node switched branches meanwhile: the next scan finds the fork
            found = self._block_transfers(node, configs, block, watched, tip, info)
            if found is None:
                break
            for transfer, expiration in found:
                transfers.append(transfer)
                expires[transfer.txid] = expiration
            hashes[number], parent, head_time = block.block_id, block.block_id, block.timestamp
        end = max(hashes) if hashes else start - 1
        kept = [[h, x] for h, x in cursor.get("blocks", []) if h < start] + [
            [h, hashes[h]] for h in sorted(hashes)
        ]
        # Once the head's time is past a transaction's expiration, the chain holds it or never will.
        expires = {txid: ms for txid, ms in expires.items() if ms > head_time}
        new_cursor = {"height": end, "blocks": kept[-KEEP_BLOCKS:], "expires": expires}
        return ScanResult(
            transfers=transfers, dropped=rewound, tip=tip, cursor=new_cursor, more=end < tip.height
        )

    def _fork(self, node: TronNode, cursor: dict[str, Any], info: NodeInfo) -> tuple[int, Block | None]:
        """The height the chain still agrees with the cursor up to, and the block after the cursor when it
        was read to tell (it names the cursor's block as its parent: no fork, and no block read twice)."""
        height = int(cursor.get("height", -1))
        blocks = cursor.get("blocks") or []
        if blocks and blocks[-1][0] == height:
            if info.head.height == height and info.head.block_id == blocks[-1][1]:
                return height, None
            if info.head.height > height:
                following = node.block(height + 1)
                if following is not None and following.parent_id == blocks[-1][1]:
                    return height, following
        return self._fork_point(node, height, blocks), None

    def _fork_point(self, node: TronNode, height: int, blocks: list[list[Any]]) -> int:
        for stored_height, stored_id in reversed(blocks):
            block = node.block(stored_height)
            if block is not None and block.block_id == stored_id:
                if stored_height < height:
                    logger.warning(
                        "tron: fork below height %s; rescanning from %s", height, stored_height + 1
                    )
                return min(int(stored_height), height)
        if blocks:
            logger.warning(
                "tron: fork deeper than the %s kept blocks; rescanning from %s", len(blocks), blocks[0][0]
            )
            return int(blocks[0][0]) - 1
        return height

    def _block_transfers(
        self,
        node: TronNode,
        configs: list[TronConfig],
        block: Block,
        watched: set[str],
        tip: BlockRef,
        info: NodeInfo,
    ) -> list[tuple[ChainTransfer, int]] | None:
        """The deposits in `block` with their transactions' expirations; None when its receipts are another
        block's (the node moved on between the two reads)."""
        ref = BlockRef(block.height, block.block_id)
        by_id = {tx.txid: tx for tx in block.transactions}
        for tx in block.transactions:
            if tx.unreadable and tx.contract_type in PAYING_KINDS:
                _alert_unreadable(configs[0].code, tx)
        found: list[tuple[ChainTransfer, int]] = []
        native = next((config for config in configs if config.contract is None), None)
        if native is not None:
            for tx in block.transactions:
                contract = tx.transaction.contract if tx.transaction else None
                if (
                    isinstance(contract, TransferContract)
                    and contract.to_address in watched
                    and tx.result == SUCCESS
                    and contract.amount > 0
                ):
                    transfer = _trx(native, tx, contract, ref, tip.height, info.solid.height)
                    found.append((transfer, _expiration(tx)))
        tokens = {config.contract: config for config in configs if config.contract}
        if tokens and block.transactions:
            receipts = node.transaction_infos(block.height)
            if any(r.block_number != block.height or r.txid not in by_id for r in receipts):
                return None
            for receipt in receipts:
                for transfer in _token_transfers(
                    tokens, receipt, watched, ref, tip.height, info.solid.height
                ):
                    found.append((transfer, _expiration(by_id[receipt.txid])))
        return found

    # --- rechecks ------------------------------------------------------------------------------------

    def recheck(self, code: str, keys: list[TransferKey]) -> list[ChainTransfer]:
        config = tron_config(code)
        node = self.node(code)
        info = node.node_info()
        blocks: dict[int, Block | None] = {}
        expires = _stored_expirations(self.scan_codes(code)[0])
        head_time: list[int] = []
        found = []
        for key in keys:
            receipt = node.transaction_info(key.txid)
            if receipt is None:
                if not head_time:
                    head_time.append(node.now_block().timestamp)
                # Not in the chain: it may still be included until its expiration has passed.
                alive = int(expires.get(key.txid, 0)) > head_time[0]
                found.append(_state_of(key, PENDING if alive else DROPPED))
                continue
            if receipt.block_number not in blocks:
                blocks[receipt.block_number] = node.block(receipt.block_number)
            block = blocks[receipt.block_number]
            if block is None:
                found.append(_state_of(key, PENDING))  # the node is between two reads: the next cycle sees
                continue
            found.append(self._rechecked(config, key, receipt, block, info))
        return found

    def _rechecked(
        self,
        config: TronConfig,
        key: TransferKey,
        receipt: TransactionInfo,
        block: Block,
        info: NodeInfo,
    ) -> ChainTransfer:
        ref = BlockRef(block.height, block.block_id)
        tx = next((tx for tx in block.transactions if tx.txid == key.txid), None)
        if tx is None:
            return _state_of(key, PENDING)
        if config.contract is None:
            if tx.unreadable:
                _alert_unreadable(config.code, tx)
                return _state_of(key, PENDING)  # open until a person has looked, never dropped unread
            contract = tx.transaction.contract if tx.transaction else None
            if not isinstance(contract, TransferContract) or key.output_index != 0:
                return _state_of(key, DROPPED)  # not the transfer it was: the chain holds another
            if tx.result != SUCCESS:
                return _state_of(key, FAILED)
            return _trx(config, tx, contract, ref, info.head.height, info.solid.height)
        if receipt.failed or receipt.receipt_result != SUCCESS:
            return _state_of(key, FAILED)
        tokens = {config.contract: config}
        for transfer in _token_transfers(tokens, receipt, None, ref, info.head.height, info.solid.height):
            if transfer.output_index == key.output_index:
                return transfer
        return _state_of(key, DROPPED)

    def in_best_chain(self, code: str, block: BlockRef) -> bool:
        found = self.node(code).block(block.height)
        return found is not None and found.block_id == block.hash

    def deposit_status(self, code: str, txid: str) -> TxStatus:
        node = self.node(code)
        receipt = node.transaction_info(txid)
        if receipt is None:
            return TxStatus(confirmations=0, known=False)
        block = node.block(receipt.block_number)
        if block is None:
            return TxStatus(confirmations=0, known=False)
        tip = node.node_info().head.height
        failed = receipt.failed or receipt.receipt_result not in ("", SUCCESS)
        return TxStatus(
            confirmations=tip - block.height + 1,
            known=True,
            block=BlockRef(block.height, block.block_id),
            failed=failed,
            failure="failed" if failed else "",
        )


def _trx(
    config: TronConfig, tx: NodeTransaction, contract: TransferContract, ref: BlockRef, tip: int, solid: int
) -> ChainTransfer:
    return ChainTransfer(
        code=config.code,
        txid=tx.txid,
        output_index=0,
        address=contract.to_address,
        tag="",
        amount=from_units(contract.amount),
        confirmations=tip - ref.height + 1,
        from_address=contract.owner_address,
        block=ref,
        final=ref.height <= solid,
    )


def _token_transfers(
    tokens: dict[str, TronConfig],
    receipt: TransactionInfo,
    watched: set[str] | None,
    ref: BlockRef,
    tip: int,
    solid: int,
) -> list[ChainTransfer]:
    """The TRC-20 deposits a SUCCESS receipt records; output index: the log's place in its transaction."""
    if receipt.failed or receipt.receipt_result != SUCCESS:
        return []
    found = []
    for index, log in receipt.trc20_transfers():
        config = tokens.get(log.contract)
        if config is None or (watched is not None and log.to_address not in watched):
            continue
        places = get_asset(config.code).amount_decimals
        # Never more than arrived: a token with more places than the asset carries is cut, not rounded up.
        amount = quantize(from_units(log.amount, config.decimals), decimals=places, rounding=ROUND_DOWN)
        if amount <= 0:
            continue  # zero-value transfers (address-poisoning spam) move nothing
        found.append(
            ChainTransfer(
                code=config.code,
                txid=receipt.txid,
                output_index=index,
                address=log.to_address,
                tag="",
                amount=amount,
                confirmations=tip - ref.height + 1,
                from_address=log.from_address,
                block=ref,
                final=ref.height <= solid,
            )
        )
    return found


def _expiration(tx: NodeTransaction) -> int:
    return tx.transaction.raw.expiration if tx.transaction else 0


def _alert_unreadable(code: str, tx: NodeTransaction) -> None:
    # One open alert per contract type, counted, each transaction logged: a protocol upgrade that adds a
    # field would make many transactions unreadable at once, and that is one thing for a person to fix.
    alert_raise(
        kind="tron_unreadable",
        key=f"{code}:{tx.contract_type}",
        message=f"TRON transaction {tx.txid} ({tx.contract_type}) could not be read ({tx.unreadable}); "
        "it may pay a deposit address: check it on an explorer",
    )


def _state_of(key: TransferKey, state: str) -> ChainTransfer:
    """What a recheck says of a recorded transfer when only its state matters (at 0 confirmations)."""
    return ChainTransfer(
        key.code, key.txid, key.output_index, "", "", Decimal(0), 0, state=state, final=False
    )


def _stored_expirations(lead: str) -> dict[str, Any]:
    cursor = ChainCursor.objects.filter(code=lead).values_list("cursor", flat=True).first() or {}
    return dict(cursor.get("expires", {}))


def _watched() -> set[str]:
    """Every TRON deposit address handed out (trx and its tokens share one key)."""
    codes = [asset.code for asset in all_assets() if asset.family == "tron"]
    return set(DepositAddress.objects.filter(code__in=codes).values_list("route_key", flat=True))


def _recorded_above(codes: list[str], height: int) -> list[TransferKey]:
    rows = Deposit.objects.filter(code__in=codes, block_height__gt=height).values_list(
        "code", "txid", "output_index"
    )
    return [TransferKey(*row) for row in rows]

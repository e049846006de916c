"""Deposits on NEAR: final blocks after the cursor, their new chunks' receipts, each receipt's own outcome
(see chains.near.backend for the whole backend).

- Blocks are read by height from the cursor (height, hash) up to the node's `final` block. A height the
  node answers UNKNOWN_BLOCK for, at or below the final block, was skipped (NEAR produces no block for
  some heights) and never comes; each block read must name the last one read as its `prev_hash`, and when
  it does not (a block the node did not answer by height), the scan walks back along `prev_hash` to the
  cursor and reads what lay between. Final blocks never revert: nothing is ever dropped by a reorg.
- A block's chunk is read only where its `height_included` is the block's height: a shard that produced no
  chunk repeats the previous one's header, which was read at its own block. So no chunk is read twice.
- Deposits are decided by RECEIPTS, not transactions: a contract's receipt that pays a deposit account in
  a later block has no transaction of ours (docs.near.org, integrations/deposits). Every action receipt
  listed in a new chunk whose receiver is a deposit account and whose predecessor is not `system` (gas and
  deposit refunds, and a deleted account's balance, come from `system`: never a customer's payment) is a
  deposit for each of its Transfer actions (txid = the receipt id, output index = the action's index).
- Its outcome, by the light-client proof against the final block, decides: executed successfully by the
  receiver in a final block: `final` (credited); failed: FAILED (credits nothing); not yet executed there
  (a receipt can wait in the receiver shard's delayed queue): seen, rechecked until it is.
"""

from __future__ import annotations

import logging
from typing import Any

from chains.base import FAILED, PENDING, BlockRef, ChainTransfer, ScanResult, TransferKey, TxStatus
from chains.near.config import near_config
from chains.near.errors import NearNodeUnavailable
from chains.near.node import NearNode
from chains.near.results import FAILURE, SUCCESS, Block, Outcome, Receipt
from chains.near.units import from_yocto
from payments.models import Deposit, DepositAddress

logger = logging.getLogger(__name__)

SCAN_BLOCKS = 200  # blocks per scan at most; `more` says there is more
MAX_WALK_BACK = 1_000  # blocks walked back along prev_hash to reach the cursor before giving up
SYSTEM = "system"


class NearScanner:
    def __init__(self) -> None:
        self._nodes: dict[tuple[str, str | None], NearNode] = {}

    def node(self, code: str) -> NearNode:
        config = near_config(code)
        key = (config.url, config.api_key)
        if key not in self._nodes:
            self._nodes[key] = NearNode(config.url, api_key=config.api_key)
        return self._nodes[key]

    def tip(self, code: str) -> BlockRef:
        head = self.node(code).head_block()
        return BlockRef(head.height, head.hash)

    def final_height(self, code: str) -> int:
        return self.node(code).final_block().height

    def cursor_at(self, code: str, height: int) -> dict[str, Any]:
        return {"height": max(height, -1), "hash": None}

    # --- scanning ------------------------------------------------------------------------------------

    def scan(self, code: str, cursor: dict[str, Any] | None) -> ScanResult:
        node = self.node(code)
        final = node.final_block()
        tip = BlockRef(final.height, final.hash)
        if cursor is None:  # a chain never scanned: nothing of ours can be in its past
            return ScanResult([], [], tip, {"height": final.height, "hash": final.hash})
        height, last = int(cursor.get("height", -1)), cursor.get("hash")
        watched = _watched(code)
        transfers: list[ChainTransfer] = []
        read = 0
        number = height + 1
        while number <= final.height and read < SCAN_BLOCKS:
            block = final if number == final.height else node.block(number)
            number += 1
            if block is None:
                continue  # a skipped height: at or below the final block, it never comes
            for each in self._between(node, last, block):
                transfers.extend(self._deposits(node, code, each, watched, final))
                read += 1
            height, last = block.height, block.hash
        cursor = {"height": height, "hash": last}
        return ScanResult(transfers, [], tip, cursor, more=height < final.height)

    def _between(self, node: NearNode, last: str | None, block: Block) -> list[Block]:
        """`block` and, before it, any block between the cursor's and it that the node did not answer by
        height (found along prev_hash), oldest first."""
        chain = [block]
        while last is not None and chain[0].prev_hash != last:
            if len(chain) > MAX_WALK_BACK:
                raise NearNodeUnavailable(
                    f"block {block.height} does not lead back to the scanned block {last} within "
                    f"{MAX_WALK_BACK} blocks: the node is on another chain (or another network)"
                )
            parent = node.block(chain[0].prev_hash)
            if parent is None:
                raise NearNodeUnavailable(
                    f"the node does not know block {chain[0].prev_hash}, the parent of block "
                    f"{chain[0].height} (garbage collected? catching up needs an archival node)"
                )
            chain.insert(0, parent)
        return chain

    def _deposits(
        self, node: NearNode, code: str, block: Block, watched: set[str], final: Block
    ) -> list[ChainTransfer]:
        found = []
        for header in block.new_chunks():
            chunk = node.chunk(header.chunk_hash)
            if chunk is None:
                raise NearNodeUnavailable(
                    f"the node does not know chunk {header.chunk_hash} of final block {block.height} "
                    "(garbage collected? catching up needs an archival node)"
                )
            for receipt in chunk.receipts:
                if receipt.receiver_id in watched and receipt.predecessor_id != SYSTEM and receipt.transfers:
                    outcome = node.receipt_outcome(receipt.receipt_id, receipt.receiver_id, final.hash)
                    found.extend(_transfers(code, receipt, block, outcome, final))
        return found

    # --- rechecks ------------------------------------------------------------------------------------

    def recheck(self, code: str, keys: list[TransferKey]) -> list[ChainTransfer]:
        node = self.node(code)
        final = node.final_block()
        found = []
        for key in keys:
            status = self._receipt_status(node, key.code, key.txid, final)
            state = FAILED if status.failed else PENDING
            found.append(
                ChainTransfer(
                    key.code, key.txid, key.output_index, "", "", from_yocto(0), status.confirmations,
                    state=state, block=status.block, final=bool(status.final),
                )
            )  # fmt: skip
        return found

    def deposit_status(self, code: str, txid: str) -> TxStatus:
        node = self.node(code)
        return self._receipt_status(node, code, txid, node.final_block())

    def _receipt_status(self, node: NearNode, code: str, receipt_id: str, final: Block) -> TxStatus:
        receiver = (
            Deposit.objects.filter(code=code, txid=receipt_id).values_list("address", flat=True).first()
        )
        outcome = None if receiver is None else node.receipt_outcome(receipt_id, receiver, final.hash)
        if outcome is None or outcome.status not in (SUCCESS, FAILURE):
            return TxStatus(confirmations=0, known=receiver is not None, final=False)
        block = node.block(outcome.block_hash)
        ref = None if block is None else BlockRef(block.height, block.hash)
        depth = 1 if block is None else final.height - block.height + 1
        if outcome.status == FAILURE or outcome.executor_id != receiver:
            return TxStatus(depth, True, ref, failed=True, failure=outcome.failure or "failed", final=True)
        return TxStatus(depth, True, ref, final=True)

    def in_best_chain(self, code: str, block: BlockRef) -> bool:
        """A final block never leaves the chain; one the node no longer has (garbage collected) is still
        there, unless the node has another block at its height."""
        node = self.node(code)
        if node.block(block.hash) is not None:
            return True
        other = node.block(block.height)
        return other is None or other.hash == block.hash


def _transfers(
    code: str, receipt: Receipt, block: Block, outcome: Outcome | None, final: Block
) -> list[ChainTransfer]:
    """One transfer per Transfer action of `receipt`, in the state its outcome gives."""
    executed = outcome is not None and outcome.status in (SUCCESS, FAILURE)
    if executed and (outcome.status == FAILURE or outcome.executor_id != receipt.receiver_id):  # type: ignore[union-attr]
        # Failed at first sight (the scan reads final blocks only): it moved nothing, so it is no deposit;
        # one seen pending and failing later is told by its recheck (FAILED).
        logger.info("near: receipt %s to %s failed: %s", receipt.receipt_id, receipt.receiver_id, outcome)
        return []
    return [
        ChainTransfer(
            code=code,
            txid=receipt.receipt_id,
            output_index=index,
            address=receipt.receiver_id,
            tag="",
            amount=from_yocto(deposit),
            confirmations=final.height - block.height + 1,
            from_address=receipt.predecessor_id,
            state=PENDING,
            block=BlockRef(block.height, block.hash),
            final=executed,
        )
        for index, deposit in receipt.transfers
        if deposit > 0
    ]


def _watched(code: str) -> set[str]:
    """Every deposit account handed out (an implicit account's id is its own route key)."""
    return set(DepositAddress.objects.filter(code=code).values_list("route_key", flat=True))

"""Deposits on Solana: the receiving address's history at `finalized`, from a cursor (see
chains.solana.backend for the whole backend).

- One address receives every payment: getSignaturesForAddress(receiving address) at `finalized`, newest
  first, paged back with `before` down to the cursor's signature (`until`), is read oldest first.
- Each new transaction is read at `finalized` (getTransaction): a failed one (`err`) paid nothing; else
  the receiving address's balance delta (postBalances - preBalances, exact lamports) is the amount, when
  it grew. Its Solana Pay `reference` routes it: the one account key of the transaction that is the tag of
  a deposit address. None, or several, leave it unrouted (tag ""), recorded for a person, never credited to
  a guess. A memo is read (and logged), never routed by: a customer types it, the wallet adds the reference.
- Finality is the chain's: `finalized` is rooted and never rolls back, and each signature's status is
  asked again (getSignatureStatuses: finalized, no err) before it is reported, so every transfer reported
  is final at first sight. A transaction the node does not give yet (its history is behind the list)
  stops the scan before it; the next scan reads it.
- The scan's `tip` is where it stands, not the node's: the finalized slot when it read everything listed,
  else the slot below the last transaction it read (never lower than it stood). The cursor keeps it
  (`height`) and ChainCursor as its height, so the operator's lag (the node's confirmed slot less it) shows
  a scan held back; caught up, it is the ~32 slots between confirmed and finalized.
"""

from __future__ import annotations

import logging
from typing import Any

from chains.base import FAILED, PENDING, BlockRef, ChainTransfer, ScanResult, TransferKey, TxStatus
from chains.solana.config import solana_config
from chains.solana.keys import receiving_address
from chains.solana.node import MAX_SIGNATURE_STATUSES, MAX_SIGNATURES_FOR_ADDRESS, SolanaNode
from chains.solana.results import ConfirmedTransaction, SignatureInfo
from chains.solana.transfers import received
from chains.solana.units import from_lamports
from payments.models import DepositAddress

logger = logging.getLogger(__name__)

SCAN_TRANSACTIONS = 200  # transactions read per scan at most; `more` says there is more
PAGE = MAX_SIGNATURES_FOR_ADDRESS  # signatures per getSignaturesForAddress call
FIRST_SCAN_SLOTS = 150  # a chain never scanned starts this far below the finalized slot (about a minute)
FINALIZED = "finalized"


class SolanaScanner:
    def __init__(self) -> None:
        self._nodes: dict[tuple[str, str | None], SolanaNode] = {}

    def node(self, code: str) -> SolanaNode:
        config = solana_config(code)
        key = (config.url, config.api_key)
        if key not in self._nodes:
            self._nodes[key] = SolanaNode(config.url, api_key=config.api_key)
        return self._nodes[key]

    def tip(self, code: str) -> BlockRef:
        return BlockRef(self.node(code).slot("confirmed"), "")  # slots, not blocks: no hash to keep

    def final_height(self, code: str) -> int:
        return self.node(code).slot(FINALIZED)

    def cursor_at(self, code: str, height: int) -> dict[str, Any]:
        return {"address": receiving_address(), "signature": None, "slot": max(height, -1)}

    # --- scanning ------------------------------------------------------------------------------------

    def scan(self, code: str, cursor: dict[str, Any] | None) -> ScanResult:
        node = self.node(code)
        hot = receiving_address()
        tip = self.tip(code)
        finalized = node.slot(FINALIZED)  # before the history: every signature up to it is listed in it
        if cursor is None:
            cursor = self.cursor_at(code, finalized - FIRST_SCAN_SLOTS)
        newest, after_slot = cursor.get("signature"), int(cursor.get("slot", -1))
        if cursor.get("address", hot) != hot:
            newest = None  # a new receiving address: its history after the cursor's slot, not the old one's
        infos = _history(node, hot, newest, after_slot)  # oldest first
        todo = infos[:SCAN_TRANSACTIONS]
        statuses = _statuses(node, [info.signature for info in todo if info.err is None])
        transfers: list[ChainTransfer] = []
        done: SignatureInfo | None = None
        for info in todo:
            if info.err is None:
                status = statuses.get(info.signature)
                if status is None or not status.finalized:
                    break  # not rooted yet as the node's status cache sees it: read it next time
                if status.err is None:
                    transaction = node.transaction(info.signature, commitment=FINALIZED)
                    if transaction is None:
                        break  # listed but not served yet: the next scan reads it, nothing skipped
                    transfer = _transfer(code, transaction, hot, tip)
                    if transfer is not None:
                        transfers.append(transfer)
            done = info
        if done is not None:
            new_cursor = {"address": hot, "signature": done.signature, "slot": done.slot}
        else:
            new_cursor = {"address": hot, "signature": newest, "slot": after_slot}
        more = done is not None and len(infos) > todo.index(done) + 1
        # Where the scan stands (the cursor's height, which the operator's lag counts from): the finalized
        # slot when it read all there was, else below the last transaction it read, else where it stood.
        if not infos or done is infos[-1]:
            height = finalized
        elif done is not None:
            height = done.slot - 1  # another transaction of that slot may be unread yet
        else:
            height = int(cursor.get("height", after_slot))
        height = max(height, int(cursor.get("height", 0)), 0)
        new_cursor["height"] = height
        return ScanResult(
            transfers=transfers,
            dropped=[],
            tip=BlockRef(height, ""),
            cursor=new_cursor,
            more=more,
        )

    # --- rechecks ------------------------------------------------------------------------------------

    def recheck(self, code: str, keys: list[TransferKey]) -> list[ChainTransfer]:
        node = self.node(code)
        hot = receiving_address()
        tip = self.tip(code)
        found = []
        for key in keys:
            transaction = node.transaction(key.txid, commitment=FINALIZED)
            if transaction is None:
                # Only finalized transfers are reported, and finalized never rolls back: one the node
                # cannot give now is out of its history (or not served yet), never gone. Kept open.
                found.append(_state_of(key, PENDING))
                continue
            transfer = _transfer(code, transaction, hot, tip)
            found.append(transfer if transfer is not None else _state_of(key, FAILED))
        return found

    def in_best_chain(self, code: str, block: BlockRef) -> bool:
        return True  # only finalized (rooted) slots are recorded, and a root never leaves the chain

    def deposit_status(self, code: str, txid: str) -> TxStatus:
        node = self.node(code)
        status = node.signature_statuses([txid], search_history=True)[0]
        if status is None:
            return TxStatus(confirmations=0, known=False)
        tip = self.tip(code).height
        failed = status.err is not None
        return TxStatus(
            confirmations=max(tip - status.slot + 1, 1),
            known=True,
            block=BlockRef(status.slot, ""),
            failed=failed,
            failure="failed" if failed else "",
            final=status.finalized,
        )


def _history(node: SolanaNode, hot: str, newest: str | None, after_slot: int) -> list[SignatureInfo]:
    """The finalized signatures of `hot` after the cursor (after `newest`, or else above `after_slot`),
    oldest first."""
    found: list[SignatureInfo] = []
    before: str | None = None
    while True:
        page = node.signatures_for_address(hot, before=before, until=newest, limit=PAGE, commitment=FINALIZED)
        kept = [info for info in page if newest is not None or info.slot > after_slot]
        found.extend(kept)
        if len(page) < PAGE or len(kept) < len(page):
            return found[::-1]
        before = page[-1].signature


def _statuses(node: SolanaNode, txids: list[str]) -> dict[str, Any]:
    statuses: dict[str, Any] = {}
    for start in range(0, len(txids), MAX_SIGNATURE_STATUSES):
        chunk = txids[start : start + MAX_SIGNATURE_STATUSES]
        statuses.update(zip(chunk, node.signature_statuses(chunk, search_history=True), strict=True))
    return statuses


def _transfer(code: str, transaction: ConfirmedTransaction, hot: str, tip: BlockRef) -> ChainTransfer | None:
    """What `transaction` paid to the receiving address `hot`, routed by its reference; None: nothing."""
    paid = received(transaction, hot)
    if paid is None:
        return None  # failed, or the address did not gain (its own payouts, fees)
    candidates = [key for key in transaction.account_keys if key != hot]
    known = list(
        DepositAddress.objects.filter(code=code, route_key=hot, tag__in=candidates)
        .values_list("tag", flat=True)
        .distinct()
    )
    if len(known) != 1:
        logger.info(
            "solana: %s paid %s lamports with %s known references: recorded unrouted",
            paid.signature,
            paid.lamports,
            len(known),
        )
    if paid.memos:
        logger.info(
            "solana: %s carries the memo %r (references route, memos do not)", paid.signature, paid.memos
        )
    return ChainTransfer(
        code=code,
        txid=paid.signature,
        output_index=0,
        address=hot,
        tag=known[0] if len(known) == 1 else "",
        amount=from_lamports(paid.lamports),
        confirmations=max(tip.height - paid.slot + 1, 1),
        from_address=paid.senders[0] if len(paid.senders) == 1 else "",
        block=BlockRef(paid.slot, ""),
        final=True,  # read at finalized, its status finalized: rooted, never rolled back
    )


def _state_of(key: TransferKey, state: str) -> ChainTransfer:
    """What a recheck says of a recorded transfer when only its state matters."""
    return ChainTransfer(
        key.code, key.txid, key.output_index, "", "", from_lamports(0), 0, state=state, final=False
    )

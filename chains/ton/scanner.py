"""Deposits on TON: the house wallet's transactions after the cursor, read from toncenter's getTransactions
(see chains.ton.backend for the whole backend).

- **Reading.** getTransactions lists an account's transactions newest first, from its last one or from a
  given (lt, hash), down to `to_lt`. A scan reads back from the newest to the cursor's lt, page by page, and
  reports what it read oldest first. A backlog longer than `MAX_PAGES` pages (a long outage) is caught up
  over several scans: the cursor keeps where the reading goes on (`resume`) and the newest transaction of
  that round (`upper`), and moves to `upper` once the reading reaches the cursor (`more` meanwhile).
- **What pays.** A transaction's inbound message, read from the transaction's own bytes, is a deposit when
  it is an internal message to the house wallet, not a bounce, carrying value, whose body is empty or a text
  comment (op 0), and when the transaction sent no bounce back (a bounceable payment to the wallet before it
  is deployed goes back to its sender). An external message (the wallet's own payout), an outgoing payout,
  a bounce, a message with no value and any other body (a jetton `transfer_notification`, `excesses`...)
  credit nothing.
- **Tag.** The comment exactly as written: routing (chains.deposits.route_lookup) strips the spaces around
  it. A comment that is not UTF-8 is no comment (""). Cut to the 64 characters a deposit's tag holds (no
  invoice's comment is that long), NULs replaced (PostgreSQL cannot store them): a payment whose comment
  matches no deposit address is recorded all the same, as an unrouted deposit (chains.unrouted).
- **Finality.** A transaction the node lists is in a shard block a masterchain block has committed: final,
  reported `final=True` at first sight. toncenter's API v2 does not say which masterchain block: a deposit
  records the masterchain block the node was at when the scan read it (it or an earlier one commits it).
- **Lookups by hash.** A deposit's txid is its transaction's hash (hex, as explorers link it). A transaction
  is fetched by (lt, hash): the cursor keeps the lt of the last `KEEP_RECENT` transfers it reported; an
  older one is searched for among the wallet's last `SEARCH_PAGES` pages.
"""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from pytoniq_core import Address

from chains.base import DROPPED, PENDING, BlockRef, ChainTransfer, ScanResult, TransferKey, TxStatus
from chains.models import ChainCursor
from chains.ton.config import TonConfig, ton_config
from chains.ton.keys import house_display, house_raw
from chains.ton.node import TonCenter
from chains.ton.results import Transaction
from chains.ton.units import from_nanotons

logger = logging.getLogger(__name__)

PAGE = 100  # transactions per getTransactions call (its most)
MAX_PAGES = 20  # pages per scan; a longer backlog is caught up over several scans
SEARCH_PAGES = 10  # pages searched for a transaction the cursor no longer remembers
KEEP_RECENT = 500  # transfers whose lt the cursor remembers
FIRST_SCAN_SECONDS = 600  # a wallet never scanned is read from this long before the node's time
TAG_LENGTH = 64  # Deposit.tag


class TonScanner:
    def __init__(self) -> None:
        self._nodes: dict[tuple[str, str | None], TonCenter] = {}

    def config(self, code: str) -> TonConfig:
        config = ton_config()
        if config is None:
            raise ImproperlyConfigured(
                'CHAIN_NODES has no "ton" entry (its url: toncenter\'s API v2 base, .../api/v2)'
            )
        return config

    def node(self, code: str) -> TonCenter:
        config = self.config(code)
        key = (config.url, config.api_key)
        if key not in self._nodes:
            self._nodes[key] = TonCenter(config.url, api_key=config.api_key)
        return self._nodes[key]

    def tip(self, code: str) -> BlockRef:
        last = self.node(code).masterchain_info().last
        return BlockRef(last.seqno, last.root_hash.hex())

    def final_height(self, code: str) -> int:
        return self.tip(code).height  # what the node lists is committed by its masterchain: final

    def cursor_at(self, code: str, height: int) -> dict[str, Any]:
        """TON's rescan: `height` is a logical time (lt) of the house wallet; everything after it again."""
        return {"lt": max(height, 0), "hash": "", "wallet": house_raw(), "recent": _stored_recent(code)}

    # --- scanning ------------------------------------------------------------------------------------

    def scan(self, code: str, cursor: dict[str, Any] | None) -> ScanResult:
        node, house = self.node(code), house_raw()
        if cursor is not None and cursor.get("wallet", house) != house:
            # Another house key: the old wallet's lts say nothing of this one, which is read as never scanned.
            logger.warning("ton: the house wallet is now %s; its transactions are read from the start", house)
            cursor = None
        if cursor is None:
            cursor = self._first_cursor(node, house)
        stop = int(cursor.get("lt", 0))
        resume, upper = cursor.get("resume"), cursor.get("upper")
        start = (int(resume[0]), bytes.fromhex(resume[1])) if resume else None
        read, going_on = _read_back(node, house, start, stop)
        # Asked after the transactions: the masterchain block it names commits every one of them.
        tip = self.tip(code)
        newest = upper or ([read[0].id.lt, read[0].id.hash.hex()] if read else [stop, cursor.get("hash", "")])
        transfers = [
            transfer
            for tx in reversed(read)
            if (transfer := self._transfer(code, tx, house, tip)) is not None
        ]
        recent = dict(cursor.get("recent", {}))
        for tx in reversed(read):
            recent[tx.id.hash.hex()] = tx.id.lt
        recent = {txid: recent[txid] for txid in list(recent)[-KEEP_RECENT:]}
        if going_on is not None:  # the backlog goes on below what was read: the cursor stays, reading resumes
            new_cursor = {**cursor, "resume": [going_on[0], going_on[1].hex()], "upper": newest}
        else:
            new_cursor = {"lt": int(newest[0]), "hash": newest[1]}
        new_cursor["recent"], new_cursor["wallet"] = recent, house
        return ScanResult(
            transfers=transfers,
            dropped=[],
            tip=tip,
            cursor=new_cursor,
            more=going_on is not None or bool(resume),
        )

    def _first_cursor(self, node: TonCenter, house: str) -> dict[str, Any]:
        """Where a wallet never scanned is read from: `FIRST_SCAN_SECONDS` before the node's time (at most
        one page back), so a payment made while the first scan was waiting is not missed, and an old one
        whose comment happens to be a tag handed out now is not taken for a payment to it."""
        since = node.address_information(house).sync_utime - FIRST_SCAN_SECONDS
        page = node.transactions(house, limit=PAGE)
        for tx in page:
            if tx.utime < since:
                return {"lt": tx.id.lt, "hash": tx.id.hash.hex()}
        if len(page) == PAGE:
            return {"lt": page[-1].parsed.prev_lt, "hash": page[-1].parsed.prev_hash.hex()}
        return {"lt": 0, "hash": ""}

    def _transfer(self, code: str, tx: Transaction, house: str, tip: BlockRef) -> ChainTransfer | None:
        message = tx.in_msg.parsed if tx.in_msg is not None else None
        if (
            message is None
            or message.kind != "internal"
            or message.bounced
            or message.value <= 0
            or message.destination != house
        ):
            return None  # no inbound message, the wallet's own external one, a bounce, no value
        if any(out.parsed is not None and out.parsed.bounced for out in tx.out_msgs):
            return None  # the wallet could not take it (not deployed yet, say): it went back to its sender
        if message.op not in (None, 0) or (message.op is None and not _empty(message.body)):
            logger.info("ton: %s is no plain TON transfer (op %s), no payment", tx.id.hash.hex(), message.op)
            return None
        return ChainTransfer(
            code=code,
            txid=tx.id.hash.hex(),
            output_index=0,
            address=house_display(),
            tag=_tag(message.comment),
            amount=from_nanotons(message.value),
            confirmations=1,
            from_address=_friendly(message.source),
            block=tip,
            final=True,
        )

    # --- rechecks and lookups ------------------------------------------------------------------------

    def recheck(self, code: str, keys: list[TransferKey]) -> list[ChainTransfer]:
        house = house_raw()
        looked_up = [(key, self._find(code, key.txid)) for key in keys]
        tip = self.tip(code)  # after the lookups, as in a scan
        found = []
        for key, tx in looked_up:
            transfer = self._transfer(code, tx, house, tip) if tx is not None else None
            if transfer is not None and key.output_index == 0:
                found.append(transfer)
            else:
                # Not found: a committed transaction never leaves the chain, so it stays open (an old one
                # past the search is looked at by a person); found and no payment: not what was recorded.
                state = DROPPED if tx is not None else PENDING
                found.append(
                    ChainTransfer(key.code, key.txid, key.output_index, "", "", Decimal(0), 0, state=state)
                )
        return found

    def in_best_chain(self, code: str, block: BlockRef) -> bool:
        """A masterchain block, once the node has it, never leaves the chain: the node must have reached it
        (and, at its very height, have it by that hash)."""
        tip = self.tip(code)
        return block.height < tip.height or block == tip

    def deposit_status(self, code: str, txid: str) -> TxStatus:
        if self._find(code, txid) is None:
            return TxStatus(confirmations=0, known=False)
        return TxStatus(confirmations=1, known=True, block=self.tip(code), final=True)

    def _find(self, code: str, txid: str) -> Transaction | None:
        node, house = self.node(code), house_raw()
        try:
            digest = bytes.fromhex(txid)
        except ValueError:
            return None
        lt = _stored_recent(code).get(txid)
        if lt is not None:
            # Archival: a liteserver that pruned an old block answers "cannot locate transaction".
            page = node.transactions(house, limit=1, lt=int(lt), hash=digest, archival=True)
            return page[0] if page else None
        position: tuple[int, bytes] | None = None
        for _ in range(SEARCH_PAGES):
            if position is None:
                page = node.transactions(house, limit=PAGE, archival=True)
            else:
                page = node.transactions(house, limit=PAGE, lt=position[0], hash=position[1], archival=True)
            for tx in page:
                if tx.id.hash == digest:
                    return tx
            if len(page) < PAGE or page[-1].parsed.prev_lt == 0:
                return None
            position = (page[-1].parsed.prev_lt, page[-1].parsed.prev_hash)
        logger.warning("ton: transaction %s not among the house wallet's last %s pages", txid, SEARCH_PAGES)
        return None


def _read_back(
    node: TonCenter, house: str, start: tuple[int, bytes] | None, stop: int
) -> tuple[list[Transaction], tuple[int, bytes] | None]:
    """The wallet's transactions above lt `stop`, newest first, from `start` (its newest when None); and
    where the reading goes on when it stopped at `MAX_PAGES` (None once it reached `stop`)."""
    read: list[Transaction] = []
    position = start
    for _ in range(MAX_PAGES):
        if position is None:
            page = node.transactions(house, limit=PAGE, to_lt=stop)
        else:
            page = node.transactions(house, limit=PAGE, lt=position[0], hash=position[1], to_lt=stop)
        read.extend(page)
        if len(page) < PAGE or page[-1].parsed.prev_lt <= stop:
            return read, None
        position = (page[-1].parsed.prev_lt, page[-1].parsed.prev_hash)
    return read, position


def _empty(body: Any) -> bool:
    return len(body.bits) == 0 and not body.refs


def _tag(comment: str | None) -> str:
    if comment is None:
        return ""
    return comment.replace("\x00", "\ufffd")[:TAG_LENGTH]


def _friendly(raw: str | None) -> str:
    """The sender as explorers show a contract: bounceable (a refund it cannot take comes back)."""
    if raw is None:
        return ""
    return str(Address(raw).to_str(is_user_friendly=True, is_url_safe=True, is_bounceable=True))


def _stored_recent(code: str) -> dict[str, Any]:
    """The lts the cursor remembers, when they are the current house wallet's."""
    cursor = ChainCursor.objects.filter(code=code).values_list("cursor", flat=True).first() or {}
    return dict(cursor.get("recent", {})) if cursor.get("wallet") == house_raw() else {}

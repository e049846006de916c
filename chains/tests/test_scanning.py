"""The one ingestion pipeline (chains.scanning) on a scripted chain: what a reorg, a double-spend, a node
outage and a restart do to deposits, invoices, webhooks and the ledger. The same pipeline runs against a
real litecoind in chains/tests/test_bitcoincore_pipeline.py."""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

import pytest

from alerts.models import Alert, AlertStatus
from chains.base import DROPPED, BlockRef, ChainTransfer, ChainUnavailable, ScanResult, TransferKey, TxStatus
from chains.models import ChainCursor, WatchRange
from chains.sandbox import SandboxBackend
from chains.scanning import CATCH_UP_ROUNDS, WATCH_AHEAD, chain_catch_up, chain_scan
from chains.tasks import chain_scan_all
from core.assets import get_asset
from invoices.models import Invoice
from payments.models import Account, Deposit, QuarantinedTransfer
from tests.factories import InvoiceFactory, StaticDepositAddressFactory
from webhooks.models import WebhookEvent

CODE = "btc"
PATH = "chains.tests.test_scanning.ScriptedChain"


class ScriptedChain(SandboxBackend):
    """A chain whose node answers what the test says: the transfers each scan reports, what a recheck finds
    (a missing key is DROPPED, as a node that no longer knows a transaction answers), and outages."""

    name = "scripted"
    watches_addresses = True
    scans: list[ScanResult] = []
    chain: dict[TransferKey, ChainTransfer] = {}
    down = False
    cursors_seen: list[dict[str, Any] | None] = []
    watch_calls: list[int] = []

    def ensure_watched(self, code: str, upto_index: int) -> int:
        if self.down:
            raise ChainUnavailable("connection refused")
        type(self).watch_calls.append(upto_index)
        return upto_index

    def scan(self, code: str, cursor: dict[str, Any] | None) -> ScanResult:
        if self.down:
            raise ChainUnavailable("connection refused")
        type(self).cursors_seen.append(cursor)
        return self.scans.pop(0)

    def recheck(self, code: str, keys: list[TransferKey]) -> list[ChainTransfer]:
        return [self.chain.get(key) or _gone(key) for key in keys]

    def in_best_chain(self, code: str, block: BlockRef) -> bool:
        return any(transfer.block == block for transfer in self.chain.values())

    def deposit_status(self, code: str, txid: str) -> TxStatus:
        found = next((t for t in self.chain.values() if t.txid == txid and t.state != DROPPED), None)
        if found is None:
            return TxStatus(confirmations=0, known=False)
        return TxStatus(confirmations=found.confirmations, known=True, block=found.block)

    def explorer_url(self, code: str, txid: str) -> str:
        return txid


def _gone(key: TransferKey) -> ChainTransfer:
    return ChainTransfer(key.code, key.txid, key.output_index, "", "", Decimal(1), -1, state=DROPPED)


@pytest.fixture
def scripted(db, settings):
    settings.CHAIN_BACKENDS = {CODE: PATH}
    ScriptedChain.scans, ScriptedChain.chain, ScriptedChain.down = [], {}, False
    ScriptedChain.cursors_seen, ScriptedChain.watch_calls = [], []
    # As after the node's first scan: addresses are handed out only inside the watched range.
    WatchRange.objects.create(code=CODE, watched_until=WATCH_AHEAD)
    return ScriptedChain


def _transfer(
    address: str, amount: str, confirmations: int, *, txid: str = "aa" * 32, block: int | None = None
):
    ref = BlockRef(block, f"hash-{block}") if block is not None else None
    return ChainTransfer(CODE, txid, 0, address, "", Decimal(amount), confirmations, block=ref)


def _tip(height: int) -> BlockRef:
    return BlockRef(height, f"hash-{height}")


def _report(
    scripted, *transfers: ChainTransfer, tip: int, dropped: tuple[TransferKey, ...] = (), more: bool = False
) -> None:
    """The next scan reports these transfers; the chain holds them as reported (for rechecks)."""
    scripted.scans.append(
        ScanResult(list(transfers), list(dropped), _tip(tip), {"hash": f"hash-{tip}"}, more=more)
    )
    for transfer in transfers:
        scripted.chain[transfer.key] = transfer


def _events(family: str, object_id: str) -> list[str]:
    return list(
        WebhookEvent.objects.filter(family=family, object_id=object_id)
        .order_by("created_at")
        .values_list("event_status", flat=True)
    )


def _available(company_id: Any) -> Decimal:
    account = Account.objects.filter(company_id=company_id, code=CODE).first()
    return account.available if account else Decimal(0)


def test_seen_at_zero_then_confirmations_rise_then_credited_once(scripted):
    invoice = InvoiceFactory(code=CODE, total="10")
    address = invoice.deposit_address.address
    needed = get_asset(CODE).confirmations
    amount = str(invoice.amount_due)

    _report(scripted, _transfer(address, amount, 0), tip=100)
    chain_scan(CODE)
    invoice.refresh_from_db()
    deposit = Deposit.objects.get(txid="aa" * 32)
    assert (invoice.status, deposit.status, deposit.block_height) == (Invoice.Status.PROCESSING, "seen", None)

    for confirmations in range(1, needed + 1):
        _report(scripted, _transfer(address, amount, confirmations, block=101), tip=100 + confirmations)
        chain_scan(CODE)
    deposit.refresh_from_db()
    invoice.refresh_from_db()
    assert (deposit.status, deposit.confirmations, deposit.block_height) == ("confirmed", needed, 101)
    assert invoice.status == Invoice.Status.DONE

    # The same transfer again (a rescan from an old cursor, a replayed cycle): nothing changes.
    before = _available(invoice.company_id)
    _report(scripted, _transfer(address, amount, needed + 5, block=101), tip=100 + needed + 5)
    chain_scan(CODE)
    assert _available(invoice.company_id) == before > 0
    assert _events("invoice", str(invoice.pk)).count("done") == 1


def test_what_was_seen_first_is_settled_first_when_two_payments_confirm_in_one_cycle(scripted):
    """The older payment (in full) is open, so the recheck reports it; the newer (a second payment) is in the
    new blocks, so the scan reports it. The older completes the invoice; the newer, settled after it, is late
    (credited, never counted), as it would be had the blocks come one scan apart."""
    invoice = InvoiceFactory(code=CODE, total="10")
    address = invoice.deposit_address.address
    needed = get_asset(CODE).confirmations
    first, rest = str(invoice.amount_due), "0.001"
    _report(scripted, _transfer(address, first, 1, txid="bb" * 32, block=101), tip=101)
    chain_scan(CODE)
    scripted.chain[TransferKey(CODE, "bb" * 32, 0)] = _transfer(
        address, first, needed, txid="bb" * 32, block=101
    )

    # The next blocks confirm the first payment and carry a second one, deep enough at once.
    top = 100 + needed
    _report(scripted, _transfer(address, rest, needed, txid="aa" * 32, block=top - needed + 1), tip=top)
    chain_scan(CODE)

    older, newer = Deposit.objects.get(txid="bb" * 32), Deposit.objects.get(txid="aa" * 32)
    invoice.refresh_from_db()
    assert (older.status, newer.status) == ("confirmed", "confirmed")
    assert (older.is_late, newer.is_late) == (False, True)
    assert (invoice.status, invoice.paid_amount) == (Invoice.Status.DONE, Decimal(first))


def test_the_cursor_is_handed_back_and_advanced_once_the_cycle_is_ingested(scripted):
    _report(scripted, tip=7)
    _report(scripted, tip=8)
    chain_scan(CODE)
    chain_scan(CODE)
    assert scripted.cursors_seen == [None, {"hash": "hash-7"}]
    cursor = ChainCursor.objects.get(code=CODE)
    assert (cursor.tip_height, cursor.tip_hash, cursor.version, cursor.paused_reason) == (8, "hash-8", 2, "")


def test_a_poll_reads_a_backlog_at_once_while_the_scan_says_there_is_more(scripted):
    for height in (7, 8, 9):
        _report(scripted, tip=height, more=True)  # e.g. after an outage: the scan reads a chunk at a time
    _report(scripted, tip=10)
    _report(scripted, tip=11)  # the next poll's

    chain_scan_all()

    assert scripted.cursors_seen == [None, {"hash": "hash-7"}, {"hash": "hash-8"}, {"hash": "hash-9"}]
    assert ChainCursor.objects.get(code=CODE).tip_height == 10


def test_a_backlog_longer_than_the_rounds_of_one_poll_waits_for_the_next_poll(scripted):
    for height in range(1, CATCH_UP_ROUNDS + 2):
        _report(scripted, tip=height, more=True)

    chain_catch_up(CODE)

    assert len(scripted.cursors_seen) == CATCH_UP_ROUNDS  # the other codes get their turn
    assert ChainCursor.objects.get(code=CODE).tip_height == CATCH_UP_ROUNDS


def test_a_reorg_that_mines_the_payment_again_drops_nothing_and_credits_once(scripted):
    invoice = InvoiceFactory(code=CODE, total="10")
    address, amount = invoice.deposit_address.address, str(invoice.amount_due)
    _report(scripted, _transfer(address, amount, 1, block=50), tip=50)
    chain_scan(CODE)

    # Block 50 is replaced: the scan reports the transfer removed, but the node has it in the new block 51.
    key = TransferKey(CODE, "aa" * 32, 0)
    scripted.scans.append(ScanResult([], [key], _tip(51), {"hash": "hash-51b"}))
    scripted.chain[key] = _transfer(address, amount, 1, block=51)
    chain_scan(CODE)
    deposit = Deposit.objects.get(txid="aa" * 32)
    assert (deposit.status, deposit.block_height) == ("seen", 51)

    needed = get_asset(CODE).confirmations
    _report(scripted, _transfer(address, amount, needed, block=51), tip=50 + needed)
    chain_scan(CODE)
    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.DONE
    assert _events("invoice", str(invoice.pk)).count("done") == 1


def test_a_double_spent_payment_is_dropped_with_its_webhook_and_the_ledger_untouched(scripted):
    static = StaticDepositAddressFactory(network=CODE)
    address = static.deposit_address.address
    _report(scripted, _transfer(address, "0.5", 0), tip=10)
    chain_scan(CODE)
    deposit = Deposit.objects.get(txid="aa" * 32)

    # The node's next scan does not mention it and a recheck finds it gone (its input spent elsewhere).
    del scripted.chain[deposit_key := TransferKey(CODE, deposit.txid, 0)]
    assert deposit_key not in scripted.chain
    _report(scripted, tip=11)
    chain_scan(CODE)

    deposit.refresh_from_db()
    assert deposit.status == Deposit.Status.DROPPED
    assert _events("deposit", str(deposit.pk)) == ["processing", "failed"]
    assert _available(static.company_id) == 0


def test_a_dropped_invoice_payment_leaves_the_invoice_waiting_for_another(scripted):
    invoice = InvoiceFactory(code=CODE, total="10")
    address, amount = invoice.deposit_address.address, str(invoice.amount_due)
    _report(scripted, _transfer(address, amount, 0), tip=10)
    chain_scan(CODE)
    scripted.chain.clear()
    _report(scripted, tip=11)
    chain_scan(CODE)
    invoice.refresh_from_db()
    assert Deposit.objects.get(txid="aa" * 32).status == Deposit.Status.DROPPED
    assert invoice.status == Invoice.Status.PROCESSING and invoice.paid_amount == 0

    # A new payment completes it.
    second = _transfer(address, amount, get_asset(CODE).confirmations, txid="bb" * 32, block=12)
    _report(scripted, second, tip=12 + second.confirmations - 1)
    chain_scan(CODE)
    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.DONE


def test_a_reorg_of_a_credited_deposit_raises_an_alert_and_never_debits(scripted, caplog):
    static = StaticDepositAddressFactory(network=CODE)
    needed = get_asset(CODE).confirmations
    _report(scripted, _transfer(static.deposit_address.address, "0.5", needed, block=5), tip=4 + needed)
    chain_scan(CODE)
    credited = _available(static.company_id)
    assert credited == Decimal("0.5")

    key = TransferKey(CODE, "aa" * 32, 0)
    del scripted.chain[key]
    with caplog.at_level(logging.ERROR, logger="kassa.alerts"):
        scripted.scans.append(ScanResult([], [key], _tip(20), {"hash": "hash-20"}))
        chain_scan(CODE)
        scripted.scans.append(ScanResult([], [key], _tip(21), {"hash": "hash-21"}))
        chain_scan(CODE)

    assert _available(static.company_id) == credited
    assert Deposit.objects.get(txid="aa" * 32).status == Deposit.Status.CONFIRMED
    alert = Alert.objects.get(kind="deposit_reversed")
    # Raised once for the reversal, not again at every later scan that still finds it gone.
    assert (alert.status, alert.count, alert.key) == (AlertStatus.OPEN, 1, f"{CODE}:{'aa' * 32}:0")
    assert Deposit.objects.get(txid="aa" * 32).reversed_at is not None
    assert any("ALERT deposit_reversed" in record.getMessage() for record in caplog.records)


def test_a_transfer_reported_dropped_that_was_never_seen_is_not_recorded(scripted):
    key = TransferKey(CODE, "cc" * 32, 0)
    scripted.scans.append(ScanResult([], [key], _tip(3), {"hash": "hash-3"}))
    chain_scan(CODE)
    assert not Deposit.objects.filter(txid="cc" * 32).exists()


def test_node_down_pauses_with_one_warning_and_an_alert_then_resumes_by_itself(scripted, caplog):
    scripted.down = True
    with caplog.at_level(logging.WARNING, logger="chains.scanning"):
        assert chain_scan(CODE) == 0
        assert chain_scan(CODE) == 0
    paused = [r for r in caplog.records if "ingestion paused" in r.getMessage()]
    assert len(paused) == 1 and "connection refused" in paused[0].getMessage()
    assert ChainCursor.objects.get(code=CODE).paused_reason == "connection refused"
    assert Alert.objects.get(kind="node_down", key=CODE, status=AlertStatus.OPEN).count == 2

    scripted.down = False
    _report(scripted, tip=9)
    with caplog.at_level(logging.WARNING, logger="chains.scanning"):
        chain_scan(CODE)
    assert any("ingestion resumed" in r.getMessage() for r in caplog.records)
    assert ChainCursor.objects.get(code=CODE).paused_reason == ""
    assert Alert.objects.get(kind="node_down", key=CODE).status == AlertStatus.RESOLVED


def test_the_node_watches_ahead_of_the_addresses_handed_out(scripted):
    WatchRange.objects.all().delete()  # a node Kassa has never scanned
    _report(scripted, tip=1)
    chain_scan(CODE)
    assert scripted.watch_calls == [WATCH_AHEAD]  # nothing handed out yet: watch the first range

    for _ in range(3):
        InvoiceFactory(code=CODE)
    _report(scripted, tip=2)
    chain_scan(CODE)
    assert scripted.watch_calls == [WATCH_AHEAD]  # still far ahead: no call to the node

    WatchRange.objects.filter(code=CODE).update(watched_until=WATCH_AHEAD // 2)
    _report(scripted, tip=3)
    chain_scan(CODE)
    assert scripted.watch_calls[-1] == 3 + WATCH_AHEAD
    assert WatchRange.objects.get(code=CODE).watched_until == 3 + WATCH_AHEAD


@pytest.mark.parametrize("owner", ["static", "invoice", "nobody"])
@pytest.mark.parametrize("amount", ["0.123456789", "0", "-0.5"])
def test_a_node_answering_an_amount_the_asset_cannot_carry_is_quarantined_not_recorded(
    scripted, caplog, owner, amount
):
    address = {
        "static": lambda: StaticDepositAddressFactory(network=CODE).deposit_address.address,
        "invoice": lambda: InvoiceFactory(code=CODE, total="10").deposit_address.address,
        "nobody": lambda: "bcrt1qnobodysaddress",
    }[owner]()
    needed = get_asset(CODE).confirmations
    bad = _transfer(address, amount, needed, block=5)  # btc carries 8 places
    good = _transfer(address, "0.25", 0, txid="bb" * 32)
    _report(scripted, bad, good, tip=4 + needed)

    with caplog.at_level(logging.ERROR, logger="chains.deposits"):
        chain_scan(CODE)

    assert not Deposit.objects.filter(txid="aa" * 32).exists()
    held = QuarantinedTransfer.objects.get(txid="aa" * 32)
    assert "the node reported" in held.error
    assert Deposit.objects.get(txid="bb" * 32).status == Deposit.Status.SEEN
    assert any("transfer quarantined" in record.getMessage() for record in caplog.records)

"""Real Celery workers (with beat) drive withdrawals to done, even when every broker message was lost and
a worker is killed with SIGKILL in the middle: each withdrawal is sent exactly once."""

import signal
from decimal import Decimal

import pytest
from django.db import connection

from payments.ledger import ledger_verify
from payments.models import LedgerEntry, SandboxTransaction
from tests.chain import fund
from tests.factories import MerchantFactory
from tests.workers import kill_tree, start_worker, wait_for
from withdrawals.models import Withdrawal
from withdrawals.rules import WithdrawalItem
from withdrawals.services import withdrawal_request
from withdrawals.tests.conftest import ADDRESSES, balance, withdrawal_events

WITHDRAWALS = 4
FAST = {
    # A fast poller and a sandbox block every second, so recovery fits in a test; the mechanism is the same.
    "WITHDRAWAL_POLL_SECONDS": "1",
    "SANDBOX_BLOCK_SECONDS": "1",
    "AUTO_WITHDRAWAL_SWEEP_SECONDS": "3600",
}


@pytest.mark.django_db(transaction=True)
def test_lost_messages_and_a_killed_worker_still_end_in_one_payment_each(tmp_path):
    created = MerchantFactory(name="Payouts", email="payouts@shop.test")
    fund(created.company, "btc", "1")
    # Accepted here, their broadcast messages go to this process's in-memory broker and are never consumed:
    # the worker's poller has to find every one, as after a broker loss.
    withdrawals = withdrawal_request(
        company=created.company,
        items=[
            WithdrawalItem(asset="btc", to=ADDRESSES["btc"], amount=Decimal("0.001"))
            for _ in range(WITHDRAWALS)
        ],
    )

    first = start_worker(tmp_path, "first", concurrency=4, **FAST)
    try:
        broadcast = wait_for(lambda: Withdrawal.objects.exclude(txid="").exists(), 60)
    finally:
        kill_tree(first, signal.SIGKILL)
    second = start_worker(tmp_path, "second", concurrency=4, **FAST)
    try:
        all_done = wait_for(lambda: Withdrawal.objects.filter(status="done").count() == WITHDRAWALS, 90)
    finally:
        kill_tree(second, signal.SIGKILL)  # nothing left to lose; a warm shutdown takes seconds

    log = (tmp_path / "second").read_text(errors="replace")[-3000:]
    assert broadcast, (tmp_path / "first").read_text(errors="replace")[-3000:]
    assert all_done, log
    for withdrawal in withdrawals:
        assert SandboxTransaction.objects.filter(reference=f"withdrawal:{withdrawal.uid}").count() == 1
        assert [e["status"] for e in withdrawal_events(withdrawal.uid)] == [
            "processing",
            "processing",
            "done",
        ]
    assert balance(created.company, "btc") == (Decimal("1") - WITHDRAWALS * Decimal("0.0011"), Decimal(0))
    assert _entries_sum(created.company, "btc") == balance(created.company, "btc")
    if connection.vendor == "postgresql":
        # On SQLite the amounts are stored as REAL and SQL SUM adds floats, so ledger_verify can report a
        # difference of 1e-19 there; the Decimal sum above is the exact check on both databases.
        assert ledger_verify() == []


def _entries_sum(company, code):
    entries = LedgerEntry.objects.filter(account__company=company, account__code=code)
    deltas = list(entries.values_list("available_delta", "held_delta"))
    return sum(a for a, _ in deltas).normalize(), sum(h for _, h in deltas).normalize()

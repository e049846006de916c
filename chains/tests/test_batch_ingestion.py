"""Ingestion in batches (`deposits_ingest`): one transaction and a few set-based statements per batch, with
exactly the outcome of ingesting each transfer alone; and the two bulk helpers it stands on."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction

from chains import deposits
from chains.base import DROPPED, FAILED, BlockRef, ChainTransfer
from chains.sandbox import new_txid
from core.assets import get_asset
from core.bulkinsert import bulk_insert
from invoices.models import Invoice
from payments.ledger import Credit, ledger_credit_many, ledger_verify
from payments.models import Account, Deposit, LedgerEntry
from tests.factories import CompanyFactory, InvoiceFactory, StaticDepositAddressFactory
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db

CONFIRMED = get_asset("btc").confirmations


def _transfer(address: str, amount: str, confirmations: int, **extra) -> ChainTransfer:
    block = BlockRef(100, "ab" * 32) if confirmations else None
    return ChainTransfer(
        "btc",
        extra.pop("txid", new_txid()),
        0,
        address,
        "",
        Decimal(amount),
        confirmations,
        block=block,
        **extra,
    )


def _one_by_one(monkeypatch):
    """Make every batch fail, so `deposits_ingest` takes its per-transfer path for all of them."""

    def failing_batch(code, transfers):
        raise RuntimeError("batch path off for this test")

    monkeypatch.setattr(deposits, "_ingest_batch", failing_batch)


def _events(deposit: Deposit) -> list[str]:
    rows = WebhookEvent.objects.filter(object_id=str(deposit.pk)).order_by("created_at")
    return [json.loads(row.body)["status"] for row in rows]


@pytest.mark.parametrize("path", ["batch", "one by one"])
def test_a_scan_of_mixed_transfers_ends_as_each_transfer_alone_would(path, monkeypatch):
    if path == "one by one":
        _one_by_one(monkeypatch)
    alice = StaticDepositAddressFactory(network="btc")
    bob = StaticDepositAddressFactory(network="btc")  # another merchant
    invoice = InvoiceFactory(code="btc", total="100")
    due = invoice.amount_due
    a1 = _transfer(alice.deposit_address.address, "0.01", CONFIRMED)
    a2 = _transfer(alice.deposit_address.address, "0.03", CONFIRMED + 4)
    b_seen = _transfer(bob.deposit_address.address, "0.02", 0)
    b_failed = _transfer(bob.deposit_address.address, "0.05", 1, state=FAILED)
    stranger = _transfer("bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", "0.04", CONFIRMED)
    paid = _transfer(invoice.deposit_address.address, str(due), CONFIRMED)
    never_seen = _transfer(alice.deposit_address.address, "0.07", 0, state=DROPPED)
    replay = _transfer(alice.deposit_address.address, "0.01", CONFIRMED + 1, txid=a1.txid)  # same key again

    ingested = deposits.deposits_ingest("btc", [a1, a2, b_seen, b_failed, stranger, paid, never_seen, replay])

    assert ingested == 8
    by_txid = {deposit.txid: deposit for deposit in Deposit.objects.all()}
    assert set(by_txid) == {a1.txid, a2.txid, b_seen.txid, b_failed.txid, stranger.txid, paid.txid}
    assert [by_txid[t.txid].status for t in (a1, a2, b_seen, b_failed, stranger, paid)] == [
        "confirmed",
        "confirmed",
        "seen",
        "failed",
        "confirmed",
        "confirmed",
    ]
    assert by_txid[stranger.txid].deposit_address_id is None and by_txid[stranger.txid].company_id is None
    assert by_txid[a2.txid].confirmations == CONFIRMED + 4
    assert by_txid[a1.txid].block_height == 100
    assert _events(by_txid[a1.txid]) == ["processing", "done"]
    assert _events(by_txid[a2.txid]) == ["processing", "done"]
    assert _events(by_txid[b_seen.txid]) == ["processing"]
    assert _events(by_txid[b_failed.txid]) == ["processing", "failed"]
    assert Account.objects.get(company=alice.company, code="btc").available == Decimal("0.04")
    assert not Account.objects.filter(company=bob.company, available__gt=0).exists()
    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.DONE
    assert ledger_verify() == []

    entries, events = LedgerEntry.objects.count(), WebhookEvent.objects.count()
    again = deposits.deposits_ingest("btc", [a1, a2, b_seen, b_failed, stranger, paid])

    assert again == 6
    assert (LedgerEntry.objects.count(), WebhookEvent.objects.count()) == (entries, events)


def test_a_bad_transfer_fails_its_batch_which_is_ingested_again_one_by_one(monkeypatch):
    static = StaticDepositAddressFactory(network="btc")
    address = static.deposit_address.address
    good = [_transfer(address, "0.01", CONFIRMED) for _ in range(3)]
    bad = _transfer(address, "0.000000001", CONFIRMED)  # more places than btc has: the ledger refuses it
    batch_calls = []
    real_batch = deposits._ingest_batch

    def counting_batch(code, transfers):
        batch_calls.append(len(transfers))
        return real_batch(code, transfers)

    monkeypatch.setattr(deposits, "_ingest_batch", counting_batch)

    ingested = deposits.deposits_ingest("btc", [*good, bad])

    assert batch_calls == [4]  # one batch, rolled back whole
    assert ingested == 3
    assert Deposit.objects.filter(status="confirmed").count() == 3
    assert Account.objects.get(company=static.company, code="btc").available == Decimal("0.03")
    assert deposits.QuarantinedTransfer.objects.get().txid == bad.txid
    assert ledger_verify() == []


def test_transfers_are_ingested_in_batches_of_the_configured_size(monkeypatch):
    static = StaticDepositAddressFactory(network="btc")
    transfers = [_transfer(static.deposit_address.address, "0.01", CONFIRMED) for _ in range(5)]
    sizes = []
    real_batch = deposits._ingest_batch
    monkeypatch.setattr(deposits, "INGEST_BATCH", 2)
    monkeypatch.setattr(
        deposits, "_ingest_batch", lambda code, batch: sizes.append(len(batch)) or real_batch(code, batch)
    )

    assert deposits.deposits_ingest("btc", transfers) == 5

    assert sizes == [2, 2, 1]
    assert LedgerEntry.objects.filter(kind="deposit_credit").count() == 5


def test_bulk_insert_writes_exact_values_defaults_and_keys():
    company = CompanyFactory()
    rows = [
        Deposit(
            code="btc",
            txid=f"{index:064x}",
            address='tab\there, new\nline, back\\slash, quote" and \\N',  # what COPY's text format escapes
            amount=Decimal("123456789012345678.123456789012345678"),  # every digit of the column
            confirmations=index,
            company=company,
        )
        for index in range(3)
    ]

    inserted = bulk_insert(rows)

    assert [row.pk for row in inserted] == [row.pk for row in rows] and all(row.pk for row in rows)
    stored = list(Deposit.objects.filter(pk__in=[row.pk for row in rows]).order_by("confirmations"))
    assert [row.txid for row in stored] == [f"{index:064x}" for index in range(3)]
    assert {row.amount for row in stored} == {Decimal("123456789012345678.123456789012345678")}
    assert all(row.status == "seen" and row.seen_at and row.block_height is None for row in stored)
    assert all(row.company_id == company.pk and row.tag == "" for row in stored)
    assert {row.address for row in stored} == {rows[0].address}


def test_bulk_insert_is_refused_whole_by_a_constraint():
    rows = [
        Deposit(code="btc", txid="a" * 64, address="x", amount=Decimal("1")),
        Deposit(code="btc", txid="b" * 64, address="x", amount=Decimal("0")),  # CHECK amount > 0
    ]

    with pytest.raises(IntegrityError), transaction.atomic():
        bulk_insert(rows)

    assert not Deposit.objects.exists()


def test_ledger_credit_many_locks_each_account_once_and_replays_exactly():
    first, second = CompanyFactory(), CompanyFactory()
    credits = [
        Credit(first.pk, "btc", Decimal("0.5"), "deposit_credit", "deposit:1"),
        Credit(second.pk, "btc", Decimal("0.25"), "deposit_credit", "deposit:2"),
        Credit(first.pk, "btc", Decimal("0.125"), "deposit_credit", "deposit:3"),
    ]

    entries = ledger_credit_many(credits)
    replayed = ledger_credit_many(credits)

    assert [entry.reference for entry in entries] == ["deposit:1", "deposit:2", "deposit:3"]
    assert [entry.pk for entry in replayed] == [entry.pk for entry in entries]
    assert Account.objects.get(company=first, code="btc").available == Decimal("0.625")
    assert Account.objects.get(company=second, code="btc").available == Decimal("0.25")
    assert LedgerEntry.objects.count() == 3
    assert ledger_verify() == []


def test_ledger_credit_many_refuses_a_changed_replay_and_a_reference_twice():
    company = CompanyFactory()
    ledger_credit_many([Credit(company.pk, "btc", Decimal("1"), "deposit_credit", "deposit:9")])

    with pytest.raises(ValueError, match="already written"):
        ledger_credit_many([Credit(company.pk, "btc", Decimal("2"), "deposit_credit", "deposit:9")])
    with pytest.raises(ValueError, match="twice"):
        ledger_credit_many(
            [
                Credit(company.pk, "btc", Decimal("1"), "deposit_credit", "deposit:10"),
                Credit(company.pk, "btc", Decimal("1"), "deposit_credit", "deposit:10"),
            ]
        )
    with pytest.raises(ValueError, match="not a credit kind"):
        ledger_credit_many([Credit(company.pk, "btc", Decimal("1"), "withdrawal_hold", "w:1")])

    assert Account.objects.get(company=company, code="btc").available == Decimal("1")


@pytest.mark.parametrize("path", ["batch", "one by one"])
def test_a_backends_own_finality_decides_over_the_count(path, monkeypatch):
    if path == "one by one":
        _one_by_one(monkeypatch)
    static = StaticDepositAddressFactory(network="btc")
    address = static.deposit_address.address
    counted = _transfer(address, "0.1", CONFIRMED)  # no signal of its own (final=None): the count decides
    not_yet = _transfer(address, "0.2", CONFIRMED + 5, final=False)  # past the count, the chain says no
    final_early = _transfer(address, "0.3", 1, final=True)  # below the count, the chain says final

    deposits.deposits_ingest("btc", [counted, not_yet, final_early])

    status = {d.amount: d.status for d in Deposit.objects.filter(address=address)}
    assert status == {Decimal("0.1"): "confirmed", Decimal("0.2"): "seen", Decimal("0.3"): "confirmed"}
    deposits.deposits_ingest("btc", [_transfer(address, "0.2", CONFIRMED + 6, txid=not_yet.txid, final=True)])
    assert Deposit.objects.get(txid=not_yet.txid).status == "confirmed"
    assert ledger_verify() == []

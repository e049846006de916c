"""sol deposits on the Solana devnet through the solana backend and the one ingestion pipeline: one receiving
address, each invoice and static address told apart by its Solana Pay reference; credited once its slot is
finalized (the chain's own signal, never before), once whatever is scanned again. A payment without a
reference, or with one Kassa never handed out, is recorded for a person and credits nothing; a failed
transaction credits nothing; a memo is read, never routed by."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest
from django.utils.html import escape

from alerts.models import Alert, AlertStatus
from chains.backend import get_backend
from chains.base import TransferKey
from chains.models import ChainCursor, UnroutedDeposit
from chains.solana import keys, scanner
from chains.solana.node import SolanaNode
from chains.status import chain_status
from chains.tasks import chain_settled_watch_all
from chains.unrouted import ALERT as UNROUTED_ALERT
from chains.unrouted import Target, unrouted_assign
from invoices.models import Invoice
from invoices.payuri import payment_uri
from payments.ledger import ledger_verify
from payments.models import Deposit
from tests.chain import SolanaChain, available, webhook_statuses
from tests.factories import InvoiceFactory, StaticDepositAddressFactory

FINAL = SolanaChain.FINAL_SLOTS


@pytest.fixture
def chain(settings, db, solana_devnet) -> SolanaChain:
    running = SolanaChain(solana_devnet)
    settings.CHAIN_BACKENDS = {"sol": "solana"}
    settings.CHAIN_NODES = running.nodes()
    settings.CHAIN_XPUBS = running.xpubs()
    running.scan()  # the cursor starts at the finalized slot
    return running


def test_an_invoice_paid_with_its_reference_is_done_once_finalized_and_never_before(chain):
    invoice = InvoiceFactory(code="sol", total="10")
    address = invoice.deposit_address
    assert address.address == chain.hot and address.tag
    txid = chain.pay(invoice.amount_due, references=(address.tag,))

    chain.scan(FINAL - 1)  # confirmed, one slot short of finalized

    assert not Deposit.objects.filter(txid=txid).exists()
    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.PENDING and available(invoice.company, "sol") == 0

    chain.scan(1)

    deposit = Deposit.objects.get(txid=txid)
    invoice.refresh_from_db()
    assert (deposit.status, deposit.amount, deposit.tag) == ("confirmed", invoice.amount_due, address.tag)
    assert deposit.deposit_address == address and deposit.from_address == str(chain.devnet.customer.pubkey())
    assert invoice.status == Invoice.Status.DONE
    credited = available(invoice.company, "sol")
    assert credited > 0
    chain.scan(3)
    assert available(invoice.company, "sol") == credited
    assert webhook_statuses("invoice", str(invoice.pk))[-2:] == ["processing", "done"]
    assert webhook_statuses("invoice", str(invoice.pk)).count("done") == 1
    assert ledger_verify() == []


def test_a_static_address_is_credited_once_per_payment_whatever_is_scanned_again(chain):
    static = StaticDepositAddressFactory(network="sol")
    reference = static.deposit_address.tag
    first = chain.pay("0.25", references=(reference,))
    second = chain.pay("0.5", references=(reference,))
    chain.scan(FINAL)
    row = ChainCursor.objects.get(code="sol")
    row.cursor = get_backend("sol").cursor_at("sol", row.cursor["slot"] - 40)  # a rescan from before both
    row.save()

    chain.scan()
    chain.scan(2)
    chain_settled_watch_all()

    assert Deposit.objects.filter(txid__in=[first, second], status="confirmed").count() == 2
    assert available(static.company, "sol") == Decimal("0.75")
    for txid in (first, second):
        assert webhook_statuses("deposit", str(Deposit.objects.get(txid=txid).pk)) == ["processing", "done"]
    assert ledger_verify() == []


def test_payments_without_a_known_reference_are_recorded_unrouted_and_credit_nothing(chain):
    invoice = InvoiceFactory(code="sol", total="10")
    bare = chain.pay("0.3")
    unknown = chain.pay("0.4", references=(keys.reference(10_000),))  # never handed out

    chain.scan(FINAL)

    for txid, amount in ((bare, "0.3"), (unknown, "0.4")):
        deposit = Deposit.objects.get(txid=txid)
        assert (deposit.deposit_address, deposit.company, deposit.amount) == (None, None, Decimal(amount))
        assert deposit.address == chain.hot and deposit.tag == ""
    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.PENDING
    assert available(invoice.company, "sol") == 0


def test_an_unrouted_payment_assigned_by_the_operator_pays_the_invoice_once_with_its_webhooks(chain):
    invoice = InvoiceFactory(code="sol", total="10")
    forgot = chain.pay(str(invoice.amount_due))  # typed by hand: no reference
    chain.scan(FINAL)
    unrouted = UnroutedDeposit.objects.get(deposit__txid=forgot)
    assert _open_alert("sol") is not None  # a person is told

    unrouted_assign(unrouted_id=unrouted.pk, target=Target("invoice", str(invoice.pk)), by="ops")
    chain.scan()
    chain_settled_watch_all()

    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.DONE
    assert Deposit.objects.get(txid=forgot).deposit_address == invoice.deposit_address
    assert webhook_statuses("invoice", str(invoice.pk))[-2:] == ["processing", "done"]
    assert webhook_statuses("invoice", str(invoice.pk)).count("done") == 1
    assert _open_alert("sol") is None
    assert ledger_verify() == []


def _open_alert(code: str) -> Alert | None:
    return Alert.objects.filter(kind=UNROUTED_ALERT, key=code, status=AlertStatus.OPEN).first()


def test_a_payment_naming_two_known_references_is_never_credited_to_a_guess(chain):
    one, other = InvoiceFactory(code="sol", total="10"), InvoiceFactory(code="sol", total="10")
    txid = chain.pay(one.amount_due, references=(one.deposit_address.tag, other.deposit_address.tag))

    chain.scan(FINAL)

    assert Deposit.objects.get(txid=txid).deposit_address is None
    for invoice in (one, other):
        invoice.refresh_from_db()
        assert invoice.status == Invoice.Status.PENDING


def test_a_failed_transaction_credits_nothing(chain):
    invoice = InvoiceFactory(code="sol", total="10")
    customer = chain.devnet.balance(chain.devnet.customer.pubkey())
    txid = chain.pay(Decimal(customer + 1) / 10**9, references=(invoice.deposit_address.tag,), lands=False)

    chain.scan(FINAL)

    assert not Deposit.objects.filter(txid=txid).exists()
    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.PENDING


@pytest.mark.parametrize("memo_program", ["v3", "v1"])
def test_a_memo_is_read_but_the_reference_decides_the_route(chain, memo_program, caplog):
    paid, named = InvoiceFactory(code="sol", total="10"), InvoiceFactory(code="sol", total="10")
    txid = chain.pay(
        paid.amount_due,
        references=(paid.deposit_address.tag,),
        memo=named.deposit_address.tag,  # the other invoice's reference, typed as a memo
        memo_program=memo_program,
    )
    memo_only = chain.pay(named.amount_due, memo=named.deposit_address.tag, memo_program=memo_program)

    with caplog.at_level("INFO", logger="chains.solana.scanner"):
        chain.scan(FINAL)

    assert Deposit.objects.get(txid=txid).deposit_address == paid.deposit_address
    assert Deposit.objects.get(txid=memo_only).deposit_address is None
    paid.refresh_from_db(), named.refresh_from_db()
    assert (paid.status, named.status) == (Invoice.Status.DONE, Invoice.Status.PENDING)
    assert named.deposit_address.tag in caplog.text  # read and logged for a person


def test_the_pay_uri_carries_the_reference_and_the_page_never_asks_to_type_it(chain, client):
    invoice = InvoiceFactory(code="sol", total="10")
    address = invoice.deposit_address

    uri = payment_uri("sol", address=address.address, amount=invoice.amount_due, tag=address.tag)
    page = client.get(f"/{invoice.pk}")

    assert uri == f"solana:{chain.hot}?amount={invoice.amount_due.normalize()}&reference={address.tag}"
    html = page.content.decode()
    assert page.status_code == 200
    assert escape(uri) in html  # the wallet link; the QR holds the same URI
    assert "tag-warning" not in html  # the client is never asked to type the reference as a memo
    # ... and is told that only the QR and the wallet link carry it.
    assert "A transfer typed in by hand to this address cannot be matched to this invoice." in html


def test_references_never_repeat_and_are_not_the_index(chain):
    invoices = [InvoiceFactory(code="sol", total="1") for _ in range(3)]
    tags = {invoice.deposit_address.tag for invoice in invoices}

    assert len(tags) == 3
    assert all(len(keys.Pubkey.from_string(tag).__bytes__()) == 32 for tag in tags)
    assert keys.reference(0) != keys.reference(1)


def test_a_long_history_is_paged_back_to_the_cursor_and_read_oldest_first(chain, monkeypatch):
    monkeypatch.setattr(scanner, "PAGE", 2)  # getSignaturesForAddress pages of 2, read back with `before`
    monkeypatch.setattr(scanner, "SCAN_TRANSACTIONS", 2)  # 2 transactions a scan: the rest the next one
    static = StaticDepositAddressFactory(network="sol")
    paid = [chain.pay(f"0.{n}", references=(static.deposit_address.tag,)) for n in range(1, 6)]
    chain.mine(FINAL)

    seen = []
    for _ in range(3):
        chain.scan()
        seen.append(set(Deposit.objects.values_list("txid", flat=True)))

    assert seen == [set(paid[:2]), set(paid[:4]), set(paid)]
    assert available(static.company, "sol") == Decimal("1.5")


def test_a_signature_whose_status_is_not_finalized_waits_and_nothing_after_it_is_skipped(chain, monkeypatch):
    invoice = InvoiceFactory(code="sol", total="10")
    txid = chain.pay(invoice.amount_due, references=(invoice.deposit_address.tag,))
    later = chain.pay("0.2")
    chain.mine(FINAL)
    asked = SolanaNode.signature_statuses

    def lagging(node, txids, **options):  # a node whose status cache is behind its history
        statuses = asked(node, txids, **options)
        return [
            dataclasses.replace(s, confirmation_status="confirmed") if t == txid else s
            for t, s in zip(txids, statuses, strict=True)
        ]

    monkeypatch.setattr(SolanaNode, "signature_statuses", lagging)
    chain.scan()

    assert not Deposit.objects.filter(txid__in=[txid, later]).exists()
    monkeypatch.undo()
    chain.scan()
    chain.scan()
    assert Deposit.objects.filter(txid__in=[txid, later]).count() == 2
    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.DONE
    assert webhook_statuses("invoice", str(invoice.pk)).count("done") == 1


def test_the_lag_counts_from_where_the_scan_stands_not_from_the_tip_it_saw(chain, monkeypatch):
    txid = chain.pay("0.2")
    chain.mine(FINAL)
    stood = ChainCursor.objects.get(code="sol").tip_height
    asked = SolanaNode.signature_statuses

    def lagging(node, txids, **options):  # a node whose status cache is behind its history
        return [
            dataclasses.replace(s, confirmation_status="confirmed") if t == txid else s
            for t, s in zip(txids, asked(node, txids, **options), strict=True)
        ]

    monkeypatch.setattr(SolanaNode, "signature_statuses", lagging)
    chain.scan(50)  # held back by the transaction it cannot finalize

    [held] = chain_status(["sol"])
    assert held.cursor_height == stood and held.lag == _head(chain) - stood
    monkeypatch.undo()
    chain.scan()

    [caught_up] = chain_status(["sol"])
    assert caught_up.cursor_height == _head(chain) - 31  # the finalized slot: everything up to it read
    assert caught_up.lag == 31  # the slots between confirmed and finalized
    assert Deposit.objects.filter(txid=txid).exists()


def _head(chain: SolanaChain) -> int:
    return int(chain.devnet.get("devnet/info")["head"])


def test_a_recheck_reads_a_transfer_again_by_signature_and_never_drops_one_it_cannot_find(chain):
    invoice = InvoiceFactory(code="sol", total="10")
    txid = chain.pay(invoice.amount_due, references=(invoice.deposit_address.tag,))
    failed = chain.pay("1000000", references=(invoice.deposit_address.tag,), lands=False)
    chain.mine(FINAL)
    unknown = "1" * 64
    backend = get_backend("sol")

    found, not_paid, missing = backend.recheck(
        "sol", [TransferKey("sol", t, 0) for t in (txid, failed, unknown)]
    )

    assert (found.tag, found.amount, found.final, found.state) == (
        invoice.deposit_address.tag,
        invoice.amount_due,
        True,
        "pending",
    )
    assert not_paid.state == "failed"
    assert (missing.state, missing.final) == ("pending", False)
    assert backend.deposit_status("sol", txid).final and backend.deposit_status("sol", failed).failed
    assert not backend.deposit_status("sol", unknown).known


def test_a_new_receiving_address_is_read_from_the_cursor_slot_on(chain, settings):
    old = StaticDepositAddressFactory(network="sol")
    chain.pay("0.1", references=(old.deposit_address.tag,))
    chain.scan(FINAL)
    settings.CHAIN_XPUBS = {"sol": str(chain.devnet.faucet.pubkey())}  # the operator moves to another wallet
    new = StaticDepositAddressFactory(network="sol")

    txid = chain.pay("0.2", to=new.deposit_address.address, references=(new.deposit_address.tag,))
    chain.scan(FINAL)

    assert new.deposit_address.address != old.deposit_address.address
    assert Deposit.objects.get(txid=txid).deposit_address == new.deposit_address
    assert available(new.company, "sol") == Decimal("0.2")

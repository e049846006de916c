"""ton deposits on the TON devnet through the ton backend and the one ingestion pipeline: every payment goes
to the house wallet, each invoice and static address is told by its comment, a payment is final once listed;
a payment with a comment that matches nothing, or none, is recorded unrouted (never dropped, never
credited); bounces, the house's own transfers, payments with no value and other contract calls credit
nothing; scanning again never credits twice."""

from __future__ import annotations

import re
from decimal import Decimal
from html import unescape
from urllib.parse import quote

import pytest
from pytoniq_core import Address, begin_cell

from alerts.models import Alert, AlertStatus
from chains.backend import get_backend
from chains.base import TransferKey
from chains.derivation import ton_comment
from chains.models import ChainCursor, UnroutedDeposit
from chains.tasks import chain_settled_watch_all
from chains.ton import scanner
from chains.unrouted import ALERT as UNROUTED_ALERT
from chains.unrouted import Target, unrouted_assign
from invoices.models import Invoice
from invoices.payuri import payment_uri, qr_svg
from payments.ledger import ledger_verify
from payments.models import Deposit, QuarantinedTransfer
from tests.chain import TonChain, available, webhook_statuses
from tests.factories import InvoiceFactory, StaticDepositAddressFactory
from tests.ton_devnet.fixtures import TonDevnet

JETTON_NOTIFICATION = 0x7362D09C  # TEP-74 transfer_notification


@pytest.fixture
def chain(settings, db, ton_devnet: TonDevnet) -> TonChain:
    running = TonChain(ton_devnet)  # a house wallet of its own: a fresh key per test
    settings.CHAIN_BACKENDS = {"ton": "ton"}
    settings.CHAIN_NODES = running.nodes()
    settings.CHAIN_XPUBS = running.xpubs()
    running.scan()  # the cursor starts at the house wallet's newest transaction
    return running


def test_an_invoice_paid_with_its_comment_is_done_at_once_and_credited_once(chain):
    invoice = InvoiceFactory(code="ton", total="10")
    address = invoice.deposit_address
    assert (address.address, address.tag) == (chain.house, ton_comment(address.derivation_index))
    txid = chain.pay(invoice.amount_due, address.tag)

    chain.scan()

    deposit = Deposit.objects.get(txid=txid)
    invoice.refresh_from_db()
    assert (deposit.status, deposit.amount, deposit.tag) == ("confirmed", invoice.amount_due, address.tag)
    assert deposit.address == chain.house and Address(deposit.from_address) == Address(chain.customer)
    assert invoice.status == Invoice.Status.DONE
    credited = available(invoice.company, "ton")
    assert credited > 0
    chain.scan()
    chain_settled_watch_all()  # its masterchain block stays the chain's: nothing to say
    assert available(invoice.company, "ton") == credited
    assert webhook_statuses("invoice", str(invoice.pk))[-2:] == ["processing", "done"]  # each once, in order
    assert webhook_statuses("invoice", str(invoice.pk)).count("done") == 1
    assert ledger_verify() == []


def test_a_comment_with_spaces_around_the_tag_routes_to_it(chain):
    invoice = InvoiceFactory(code="ton", total="10")

    txid = chain.pay(invoice.amount_due, f" {invoice.deposit_address.tag}\n")
    chain.scan()

    deposit = Deposit.objects.get(txid=txid)
    assert deposit.tag == f" {invoice.deposit_address.tag}\n"  # recorded as written
    assert deposit.deposit_address == invoice.deposit_address


def test_a_static_address_credits_each_payment_once_whatever_is_scanned_again(chain):
    static = StaticDepositAddressFactory(network="ton")
    tag = static.deposit_address.tag
    first = chain.pay("1.5", tag)
    second = chain.pay("2.000000001", tag)
    chain.scan()

    row = ChainCursor.objects.get(code="ton")
    row.cursor = get_backend("ton").cursor_at("ton", 0)  # a rescan of the wallet's whole history
    row.save()
    chain.scan()
    chain.scan()

    assert available(static.company, "ton") == Decimal("3.500000001")
    for txid in (first, second):
        deposit = Deposit.objects.get(txid=txid)
        assert webhook_statuses("deposit", str(deposit.pk)) == ["processing", "done"]
    assert Deposit.objects.count() == 2
    assert ledger_verify() == []


def test_a_payment_with_a_wrong_comment_or_none_is_recorded_unrouted_and_credits_nothing(chain):
    invoice = InvoiceFactory(code="ton", total="10")
    wrong = chain.pay(invoice.amount_due, "order 1234")  # the customer typed something else
    forgotten = chain.pay(invoice.amount_due)  # the most common TON support ticket

    chain.scan()

    reasons = {}
    for txid in (wrong, forgotten):
        deposit = Deposit.objects.get(txid=txid)
        assert (deposit.deposit_address, deposit.company, deposit.status) == (None, None, "confirmed")
        reasons[txid] = UnroutedDeposit.objects.get(deposit=deposit).reason
    assert reasons == {wrong: "unknown_tag", forgotten: "no_tag"}
    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.PENDING
    assert available(invoice.company, "ton") == 0


def test_an_unrouted_payment_assigned_by_the_operator_pays_the_invoice_once_with_its_webhooks(chain):
    invoice = InvoiceFactory(code="ton", total="10")
    forgot = chain.pay(invoice.amount_due)  # the comment forgotten
    chain.scan()
    unrouted = UnroutedDeposit.objects.get(deposit__txid=forgot)
    assert Alert.objects.get(kind=UNROUTED_ALERT, key="ton").status == AlertStatus.OPEN  # a person is told

    unrouted_assign(unrouted_id=unrouted.pk, target=Target("invoice", str(invoice.pk)), by="ops")
    chain.scan()

    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.DONE
    assert Deposit.objects.get(txid=forgot).deposit_address == invoice.deposit_address
    assert webhook_statuses("invoice", str(invoice.pk))[-2:] == ["processing", "done"]
    assert webhook_statuses("invoice", str(invoice.pk)).count("done") == 1
    assert Alert.objects.get(kind=UNROUTED_ALERT, key="ton").status == AlertStatus.RESOLVED
    assert ledger_verify() == []


def test_a_comment_with_one_digit_mistyped_pays_no_other_merchants_invoice(chain):
    paid, other = InvoiceFactory(code="ton", total="10"), InvoiceFactory(code="ton", total="10")
    # The customer of `paid` types its comment with its first digit wrong: the index of `other`. Bare
    # indexes as comments would have paid `other` with it.
    typo = str(other.deposit_address.derivation_index) + paid.deposit_address.tag[-1]
    assert len(typo) == len(paid.deposit_address.tag) == 2 and typo[1:] == paid.deposit_address.tag[1:]

    txid = chain.pay(paid.amount_due, typo)
    chain.scan()

    assert UnroutedDeposit.objects.get(deposit__txid=txid).reason == "unknown_tag"
    for invoice in (paid, other):
        invoice.refresh_from_db()
        assert invoice.status == Invoice.Status.PENDING
        assert available(invoice.company, "ton") == 0


def test_bounces_the_houses_own_transfers_empty_payments_and_contract_calls_credit_nothing(chain):
    invoice = InvoiceFactory(code="ton", total="10")
    tag = invoice.deposit_address.tag
    # Bounceable to the house wallet before it is deployed: the wallet cannot take it, it goes back.
    bounced_back = chain.pay(invoice.amount_due, tag, bounce=True)
    funded = chain.pay("3")  # no comment: recorded unrouted
    nowhere = Address((0, bytes(31) + b"\x07")).to_str(is_bounceable=True)
    outgoing = chain.house_sends(nowhere, "1")  # a payout to an undeployed address: it bounces back
    empty = chain.pay("0", tag)  # a message with no value
    body = begin_cell().store_uint(JETTON_NOTIFICATION, 32).store_uint(0, 64).store_coins(10**9).end_cell()
    forged = chain.send_body(chain.house, "0.05", body)  # a jetton notification from no jetton wallet
    paid = chain.pay(invoice.amount_due, tag, bounce=True)  # deployed now: a bounceable payment is taken

    chain.scan()

    assert set(Deposit.objects.values_list("txid", flat=True)) == {funded, paid}
    assert not QuarantinedTransfer.objects.exists()  # left out, not refused as a bad transfer
    for txid in (bounced_back, outgoing, empty, forged):
        assert not Deposit.objects.filter(txid=txid).exists()
    history = chain.client.transactions(chain.house, limit=10)
    assert any(tx.in_msg is not None and tx.in_msg.bounced for tx in history)  # the payout's bounce came home
    invoice.refresh_from_db()
    assert (invoice.status, invoice.paid_amount) == (Invoice.Status.DONE, invoice.amount_due)  # once


def test_a_backlog_longer_than_a_scan_is_caught_up_over_several_and_credited_once(chain, monkeypatch):
    monkeypatch.setattr(scanner, "PAGE", 2)
    monkeypatch.setattr(scanner, "MAX_PAGES", 1)
    static = StaticDepositAddressFactory(network="ton")
    paid = [chain.pay(f"1.{n}", static.deposit_address.tag) for n in range(5)]

    scans = 0
    while scans == 0 or ChainCursor.objects.get(code="ton").cursor.get("resume"):
        chain.scan()
        scans += 1
        assert scans < 10
    assert scans == 3  # five transactions, two a scan: the backlog is read over three
    chain.pay("2", static.deposit_address.tag)
    chain.scan()

    assert set(paid) <= set(Deposit.objects.values_list("txid", flat=True))
    assert Deposit.objects.count() == 6
    assert available(static.company, "ton") == Decimal("8")  # 1.0 + 1.1 + 1.2 + 1.3 + 1.4 + 2
    assert ledger_verify() == []


def test_the_backend_answers_for_blocks_and_transactions_as_the_node_sees_them(chain):
    backend = get_backend("ton")
    static = StaticDepositAddressFactory(network="ton")
    tag = static.deposit_address.tag
    txid = chain.pay("1", tag)
    chain.scan()
    deposit = Deposit.objects.get(txid=txid)

    status = backend.deposit_status("ton", txid)
    [rechecked] = backend.recheck("ton", [TransferKey("ton", txid, 0)])

    assert status.known and status.final and status.block is not None
    assert backend.in_best_chain("ton", status.block)
    assert (rechecked.amount, rechecked.tag, rechecked.final) == (Decimal(1), tag, True)
    assert backend.deposit_status("ton", "ab" * 32).known is False
    ChainCursor.objects.filter(code="ton").update(cursor={})  # the cursor no longer remembers its lt
    assert backend.deposit_status("ton", txid).known  # found among the wallet's last pages
    assert backend.tip("ton").height >= deposit.block_height
    assert backend.explorer_url("ton", txid) == txid  # a private network: the hash itself
    assert backend.spendable("ton") > 0


def test_the_pay_page_shows_the_non_bounceable_house_address_and_a_ton_transfer_link(chain, client):
    invoice = InvoiceFactory(code="ton", total="12.34")
    address = invoice.deposit_address

    html = client.get(f"/{invoice.pk}").content.decode()

    nanotons = int(invoice.amount_due * 10**9)
    uri = f"ton://transfer/{chain.house}?amount={nanotons}&text={quote(address.tag)}"
    assert chain.house.startswith("UQ")
    assert payment_uri("ton", address=address.address, amount=invoice.amount_due, tag=address.tag) == uri
    assert qr_svg(uri, title="QR code for this payment") in html
    assert unescape(re.search(r'id="tag">([^<]+)<', html).group(1)).strip() == address.tag
    assert f'href="{unescape(uri)}"' in unescape(html)  # "Open in wallet app"
    shown = unescape(re.search(r'id="amount">([^<]+)<', html).group(1)).strip()
    chain.pay(shown, address.tag)  # what the client sends, as the page shows it
    chain.scan()
    invoice.refresh_from_db()
    assert (invoice.status, invoice.paid_amount) == (Invoice.Status.DONE, invoice.amount_due)


def test_a_long_comment_or_one_with_a_nul_is_recorded_as_far_as_a_tag_holds(chain):
    long_one = chain.pay("1", "x" * 100)  # a tag holds 64 characters (PostgreSQL would refuse more)
    with_nul = chain.pay("1", "7\x00")  # PostgreSQL cannot store a NUL in text

    chain.scan()

    assert Deposit.objects.get(txid=long_one).tag == "x" * 64
    assert Deposit.objects.get(txid=with_nul).tag == "7\ufffd"
    assert not QuarantinedTransfer.objects.exists()
    assert UnroutedDeposit.objects.count() == 2


def test_a_new_house_key_is_read_from_its_own_start_not_from_the_old_wallets_cursor(chain, settings):
    static = StaticDepositAddressFactory(network="ton")
    chain.pay("1", static.deposit_address.tag)
    chain.scan()
    settings.CHAIN_XPUBS = {"ton": "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"}
    new_house = get_backend("ton").hot_address("ton")

    txid = chain.pay("2", to=new_house)  # the old wallet's lts say nothing of the new one's
    chain.scan()

    deposit = Deposit.objects.get(txid=txid)
    assert (deposit.address, deposit.deposit_address, deposit.amount) == (new_house, None, Decimal(2))
    wallet = Address(new_house)
    assert ChainCursor.objects.get(code="ton").cursor["wallet"] == f"0:{wallet.hash_part.hex()}"

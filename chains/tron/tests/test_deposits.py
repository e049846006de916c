"""trx and trc20usdt deposits on the TRON devnet through the tron backend and the one ingestion pipeline:
seen at first sight, credited only once their block is solidified (never by a count), credited once
whatever is scanned again; reverted and out-of-energy transfers credit nothing; a fork that takes a
transfer away before solidification drops it once its expiration has passed (its webhook sent), and a
transaction the client cannot read raises an alert."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest

from alerts.models import Alert
from chains.backend import get_backend
from chains.base import TxStatus
from chains.models import ChainCursor
from chains.tasks import chain_settled_watch_all
from chains.tron.node import TronNode
from invoices.models import Invoice
from payments.ledger import ledger_verify
from payments.models import Deposit
from tests.chain import TronChain, available, webhook_statuses
from tests.factories import InvoiceFactory, StaticDepositAddressFactory
from tests.tron_devnet.fixtures import tron_devnet  # noqa: F401

SOLID = 19  # the devnet solidifies a block 19 blocks behind the head


@pytest.fixture
def chain(settings, db, tron_devnet) -> TronChain:  # noqa: F811
    running = TronChain(tron_devnet)
    settings.CHAIN_BACKENDS = {"trx": "tron", "trc20usdt": "tron"}
    settings.CHAIN_NODES = running.nodes()
    running.scan()  # the cursor starts at the tip
    return running


@pytest.mark.parametrize("code", ["trc20usdt", "trx"])
def test_an_invoice_paid_by_a_signed_transfer_is_processing_at_sight_and_done_once_solid(chain, code):
    invoice = InvoiceFactory(code=code, total="10")
    address = invoice.deposit_address.address
    pay = chain.pay_token if code == "trc20usdt" else chain.pay
    txid = pay(address, invoice.amount_due)

    chain.scan(1)

    deposit = Deposit.objects.get(txid=txid)
    invoice.refresh_from_db()
    assert (deposit.code, deposit.status, deposit.amount) == (code, "seen", invoice.amount_due)
    assert deposit.from_address == chain.customer.address and deposit.address == address
    assert invoice.status == Invoice.Status.PROCESSING
    chain.scan(SOLID - 1)  # its block is one short of the solidified height
    deposit.refresh_from_db()
    assert (deposit.status, deposit.confirmations) == ("seen", SOLID)
    assert available(invoice.company, code) == 0

    chain.scan(1)

    deposit.refresh_from_db()
    invoice.refresh_from_db()
    assert (deposit.status, invoice.status) == ("confirmed", Invoice.Status.DONE)
    credited = available(invoice.company, code)
    assert credited > 0
    chain.scan(3)
    assert available(invoice.company, code) == credited
    assert webhook_statuses("invoice", str(invoice.pk))[-2:] == ["processing", "done"]  # each once, in order
    assert webhook_statuses("invoice", str(invoice.pk)).count("done") == 1
    assert ledger_verify() == []


def test_the_solidified_block_decides_not_the_asset_confirmations(chain, settings):
    settings.ASSET_OVERRIDES = {"trc20usdt": {"confirmations": 1}}
    invoice = InvoiceFactory(code="trc20usdt", total="10")
    txid = chain.pay_token(invoice.deposit_address.address, invoice.amount_due)

    chain.scan(5)  # 5 confirmations: over the count, not yet solid

    assert Deposit.objects.get(txid=txid).status == "seen"
    chain.scan(SOLID - 4)
    assert Deposit.objects.get(txid=txid).status == "confirmed"


def test_a_static_address_is_credited_once_whatever_is_scanned_again(chain):
    static = StaticDepositAddressFactory(network="trc20usdt")
    address = static.deposit_address.address
    txid = chain.pay_token(address, "12.345678")
    chain.scan(SOLID + 1)
    assert Deposit.objects.get(txid=txid).status == "confirmed"

    chain.scan()
    chain.scan(2)
    row = ChainCursor.objects.get(code="trx")
    row.cursor = get_backend("trx").cursor_at("trx", row.cursor["height"] - 30)  # a rescan
    row.save()
    chain.scan()

    chain_settled_watch_all()  # the credited deposit's block is still the chain's: nothing to say
    assert Deposit.objects.filter(txid=txid).count() == 1
    assert not Alert.objects.exists()
    assert available(static.company, "trc20usdt") == Decimal("12.345678")
    assert webhook_statuses("deposit", str(Deposit.objects.get(txid=txid).pk)) == ["processing", "done"]
    assert ledger_verify() == []


def test_a_reverted_and_an_out_of_energy_transfer_credit_nothing(chain):
    invoice = InvoiceFactory(code="trc20usdt", total="10")
    address = invoice.deposit_address.address
    bob = chain.devnet.accounts["bob"]
    chain.devnet.blacklist(bob.address)
    chain.mine()
    reverted = chain.pay_token(address, invoice.amount_due, key=bob)  # Tether's blacklist: REVERT
    starved = chain.pay_token(address, invoice.amount_due, fee_limit=1_000)  # OUT_OF_ENERGY

    chain.scan(SOLID + 2)

    for txid, result in ((reverted, "REVERT"), (starved, "OUT_OF_ENERGY")):
        assert chain.devnet.info_by_id(txid)["receipt"]["result"] == result  # included, and failed
    assert not Deposit.objects.exists()
    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.PENDING


def test_trx_sent_to_a_token_address_is_recorded_never_credited_as_the_token(chain):
    invoice = InvoiceFactory(code="trc20usdt", total="10")
    txid = chain.pay(invoice.deposit_address.address, "3")
    chain.scan(SOLID + 1)
    deposit = Deposit.objects.get(txid=txid)
    assert (deposit.code, deposit.deposit_address, deposit.company) == ("trx", None, invoice.company)
    assert available(invoice.company, "trc20usdt") == 0


def test_a_fork_before_solidification_drops_the_deposit_once_it_has_expired(chain):
    static = StaticDepositAddressFactory(network="trc20usdt")
    txid = chain.pay_token(static.deposit_address.address, "5")
    chain.scan(2)
    deposit = Deposit.objects.get(txid=txid)
    assert deposit.status == "seen"

    assert txid in chain.fork(2)  # the block holding it is gone, and the transaction with it
    chain.scan(3)  # the new branch is longer: the stored ids no longer match

    deposit.refresh_from_db()
    assert deposit.status == "seen"  # not in the chain, but it could still be included until it expires
    assert (deposit.confirmations, deposit.block_height) == (0, None)
    chain.scan(20)  # 60 s of blocks: past its expiration, it can never be included
    deposit.refresh_from_db()
    assert deposit.status == "dropped"
    assert webhook_statuses("deposit", str(deposit.pk)) == ["processing", "failed"]
    chain.scan(SOLID)
    assert available(static.company, "trc20usdt") == 0
    assert ledger_verify() == []


def test_a_transfer_included_again_after_a_fork_is_credited_once(chain):
    static = StaticDepositAddressFactory(network="trx")
    key = chain.customer
    signed = key.sign(chain.devnet.transfer(key, static.deposit_address.address, 5 * 10**6))
    txid = chain.send(signed)
    chain.scan(2)
    chain.fork(2)
    chain.scan(1)

    chain.send(signed)  # the same bytes again before they expire (a wallet re-broadcasting them)
    chain.scan(SOLID + 1)

    deposit = Deposit.objects.get(txid=txid)
    assert (deposit.status, deposit.amount) == ("confirmed", Decimal(5))
    assert available(static.company, "trx") == Decimal(5)
    assert webhook_statuses("deposit", str(deposit.pk)) == ["processing", "done"]
    assert ledger_verify() == []


def test_a_transaction_the_client_cannot_read_raises_an_alert(chain, monkeypatch):
    static = StaticDepositAddressFactory(network="trx")
    txid = chain.pay(static.deposit_address.address, "2")
    real = TronNode.block

    def unreadable(self, height, *, solid=False):
        block = real(self, height, solid=solid)
        if block is None:
            return None
        changed = [
            dataclasses.replace(tx, transaction=None, unreadable="field 99 of TransferContract is unknown")
            if tx.txid == txid
            else tx
            for tx in block.transactions
        ]
        return dataclasses.replace(block, transactions=tuple(changed))

    monkeypatch.setattr(TronNode, "block", unreadable)

    chain.scan(1)

    alert = Alert.objects.get(kind="tron_unreadable")
    assert alert.key == "trx:TransferContract" and txid in alert.message and "field 99" in alert.message
    assert not Deposit.objects.exists()  # never taken for a payment it cannot read, nor passed over


def test_an_invoice_made_and_read_over_http_is_paid_on_the_chain(chain, api, anon):
    created = api.post(
        "/api/invoices/v1/regular",
        {"invoiceCurrency": "usd", "items": [{"name": "Coffee", "price": "25"}]},
        format="json",
    ).json()
    url = f"/api/invoices/v1/regular/{created['id']}"
    filled = anon.post(
        f"{url}/proceed", {"clientEmail": "client@example.com", "paymentCurrency": "trc20usdt"}, format="json"
    ).json()
    assert filled["sandbox"] is False and filled["address"]["asset"] == "trc20usdt"
    txid = chain.pay_token(filled["address"]["address"], filled["paymentDetails"]["amount"])

    chain.scan(1)
    seen = anon.get(url).json()
    chain.scan(SOLID)
    done = anon.get(url).json()

    assert seen["status"] == "processing"
    assert done["status"] == "done"
    assert Decimal(done["paymentDetails"]["paidAmount"]) == Decimal(filled["paymentDetails"]["amount"])
    [paid] = done["invoiceTransactions"]
    assert (paid["txHash"], paid["status"], paid["from"]) == (
        txid,
        "confirmed",
        "trc20usdt",
    )  # private: the txid


def test_the_backend_answers_for_blocks_and_transactions_as_the_node_sees_them(chain):
    backend = get_backend("trx")
    bob = chain.devnet.accounts["bob"]
    chain.devnet.blacklist(bob.address)
    paid = chain.pay(chain.devnet.accounts["carol"].address, "1")
    reverted = chain.pay_token(chain.devnet.accounts["carol"].address, "1", key=bob)
    head = chain.mine(1)

    status = backend.deposit_status("trx", paid)

    assert backend.tip("trx").height == head
    assert status.known and status.confirmations == 1 and not status.failed
    assert status.block is not None and status.block.height == head
    assert backend.in_best_chain("trx", status.block)
    assert backend.deposit_status("trc20usdt", reverted).failed
    chain.fork(1)
    chain.mine(2)
    assert not backend.in_best_chain("trx", status.block)  # same height, another block
    assert backend.deposit_status("trx", paid) == TxStatus(confirmations=0, known=False)


def test_a_scan_reads_each_new_block_once_and_an_idle_one_none(chain, monkeypatch):
    reads = []
    real = TronNode.block

    def counted(self, height, *, solid=False):
        reads.append(height)
        return real(self, height, solid=solid)

    monkeypatch.setattr(TronNode, "block", counted)
    head = chain.mine(3)

    chain.scan()
    assert reads == [head - 2, head - 1, head]  # the first one also tells there was no fork
    reads.clear()
    chain.scan()
    assert reads == []  # the head is still the cursor's block

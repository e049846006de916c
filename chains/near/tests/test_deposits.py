"""near deposits on the NEAR JSON-RPC stub through the near backend and the one ingestion pipeline: each
invoice gets an implicit account from the signer's key pool; a payment is decided by its receipt (a
contract's receipt made blocks after its transaction too) and credited once its block is final, never
before; a failed receipt credits nothing, a refund from `system` is no payment; skipped heights and a
carried-over chunk are read once, and a rescan credits nothing twice; the signer down (no deposit keys to
export) stops no scan and tells a person."""

from __future__ import annotations

from decimal import Decimal

import pytest

from alerts.models import Alert, AlertStatus
from chains.backend import get_backend
from chains.derivation import DEVELOPMENT_MNEMONIC
from chains.evm.signer import SignerUnavailable
from chains.models import ChainCursor, PoolKey, WatchRange
from chains.near import pool, transaction
from chains.near.keys import hot_key, pool_public_keys, seed_of
from chains.near.signer import get_signer
from chains.scanning import WATCH_AHEAD
from chains.tasks import chain_settled_watch_all
from invoices.models import Invoice
from payments.ledger import ledger_verify
from payments.models import Deposit
from tests.chain import NearChain, available, webhook_statuses
from tests.factories import InvoiceFactory, StaticDepositAddressFactory

FINAL = NearChain.FINAL_BLOCKS


@pytest.fixture
def chain(settings, db, near_devnet) -> NearChain:
    running = NearChain(near_devnet)
    settings.CHAIN_BACKENDS = {"near": "near"}
    settings.CHAIN_NODES = running.nodes()
    settings.CHAIN_XPUBS = {}
    running.scan()  # the cursor starts at the final block; the key pool is topped up
    return running


def test_each_invoice_gets_a_fresh_account_of_the_signers_pool(chain):
    first, second = InvoiceFactory(code="near", total="10"), InvoiceFactory(code="near", total="10")

    accounts = [first.deposit_address.address, second.deposit_address.address]
    indexes = [first.deposit_address.derivation_index, second.deposit_address.derivation_index]
    derived = dict(pool_public_keys(seed_of(DEVELOPMENT_MNEMONIC), min(indexes), 2))
    assert accounts == [transaction.implicit_account(derived[index]) for index in indexes]
    assert accounts[0] != accounts[1] and all(transaction.is_implicit(a) for a in accounts)
    assert PoolKey.objects.filter(family="near").count() > 2  # exported ahead of use


def test_an_invoice_paid_by_a_transfer_is_done_once_final_and_never_before(chain):
    invoice = InvoiceFactory(code="near", total="10")
    account = invoice.deposit_address.address
    chain.pay(invoice.amount_due, account)

    chain.scan(FINAL - 1)  # executed, not final yet

    assert not Deposit.objects.filter(address=account).exists()
    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.PENDING

    chain.scan(1)

    deposit = Deposit.objects.get(address=account)
    invoice.refresh_from_db()
    assert (deposit.status, deposit.amount, deposit.output_index) == ("confirmed", invoice.amount_due, 0)
    assert deposit.from_address == chain.devnet.faucet
    assert invoice.status == Invoice.Status.DONE
    credited = available(invoice.company, "near")
    chain.scan(3)
    assert available(invoice.company, "near") == credited > 0
    assert webhook_statuses("invoice", str(invoice.pk))[-2:] == ["processing", "done"]
    assert webhook_statuses("invoice", str(invoice.pk)).count("done") == 1
    assert ledger_verify() == []


def test_a_contracts_receipt_in_a_later_block_pays_the_invoice(chain):
    invoice = InvoiceFactory(code="near", total="10")
    account = invoice.deposit_address.address
    receipt = chain.pay(invoice.amount_due, account, contract=True)  # pay.devnet transfers 2 blocks later

    chain.scan(FINAL + 3)

    deposit = Deposit.objects.get(address=account)
    assert (deposit.txid, deposit.status, deposit.from_address) == (receipt, "confirmed", "pay.devnet")
    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.DONE and deposit.amount == invoice.amount_due


def test_a_failed_receipt_and_a_refund_from_system_credit_nothing(chain):
    invoice = InvoiceFactory(code="near", total="10")
    account = invoice.deposit_address.address
    chain.devnet.failing_transfer(account, 10**24)
    chain.devnet.system_refund(account, 5 * 10**24)

    chain.scan(FINAL + 2)

    assert chain.devnet.balance(account) == 5 * 10**24  # the refund arrived; the failed transfer did not
    assert not Deposit.objects.filter(address=account).exists()
    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.PENDING and available(invoice.company, "near") == 0
    assert ledger_verify() == []


def test_skipped_heights_and_a_carried_over_chunk_are_read_once(chain):
    invoice = InvoiceFactory(code="near", total="10")
    static = StaticDepositAddressFactory(network="near")
    chain.pay("1", static.deposit_address.address)
    chain.devnet.skip(3)  # the block holding the transfer comes three heights late
    chain.devnet.produce(1)
    for shard in (0, 1):
        chain.devnet.carry_over(shard)  # the next block repeats both shards' chunks: nothing new in it
    chain.pay(invoice.amount_due, invoice.deposit_address.address)
    chain.devnet.produce(2)
    chain.devnet.skip(2)

    chain.scan(FINAL + 2)
    chain.scan(2)

    assert Deposit.objects.filter(address=static.deposit_address.address, status="confirmed").count() == 1
    assert available(static.company, "near") == Decimal(1)
    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.DONE
    assert Deposit.objects.filter(code="near").count() == 2


def test_a_rescan_from_before_credits_nothing_twice(chain):
    static = StaticDepositAddressFactory(network="near")
    account = static.deposit_address.address
    chain.pay("0.25", account)
    chain.pay("0.5", account, contract=True)
    chain.scan(FINAL + 3)
    row = ChainCursor.objects.get(code="near")
    row.cursor = get_backend("near").cursor_at("near", row.cursor["height"] - 12)
    row.save()

    chain.scan()
    chain.scan(2)
    chain_settled_watch_all()

    assert Deposit.objects.filter(address=account, status="confirmed").count() == 2
    assert available(static.company, "near") == Decimal("0.75")
    assert ledger_verify() == []


def test_a_signer_down_stops_no_scan_and_tells_a_person(chain, monkeypatch):
    invoice = InvoiceFactory(code="near", total="10")  # an account from the pool topped up at setup
    chain.pay(invoice.amount_due, invoice.deposit_address.address)

    def down(*args: object) -> list[str]:
        raise SignerUnavailable("/run/kassa/signer.sock: No such file or directory")

    monkeypatch.setattr(get_signer(), "public_keys", down)
    PoolKey.objects.filter(index__gt=invoice.deposit_address.derivation_index + 10).delete()
    WatchRange.objects.filter(code="near").update(watched_until=pool.exported_until())

    chain.scan(FINAL)  # the range is short: the scan asks for keys, the signer is down

    invoice.refresh_from_db()
    assert invoice.status == Invoice.Status.DONE  # the scan went on
    alert = Alert.objects.get(kind=pool.ALERT, key="near")
    assert alert.status == AlertStatus.OPEN and "signer.sock" in alert.message
    assert pool.exported_until() < invoice.deposit_address.derivation_index + WATCH_AHEAD

    monkeypatch.undo()  # the signer answers again
    chain.scan()
    assert Alert.objects.get(pk=alert.pk).status == AlertStatus.RESOLVED


def test_after_a_change_of_seed_new_invoices_get_the_new_seeds_accounts_and_old_ones_still_pay(
    chain, settings, monkeypatch
):
    old = InvoiceFactory(code="near", total="10")
    other = seed_of("legal winner thank year wave sausage worth useful legal winner thank yellow")
    settings.CHAIN_XPUBS = {"near": hot_key(other)[1].hex()}  # the operator moved to another seed

    def new_signer(code: str, start: int, count: int) -> list[str]:
        return [key.hex() for _, key in pool_public_keys(other, start, count)]

    monkeypatch.setattr(get_signer(), "public_keys", new_signer)
    chain.scan()  # the range is brought back to what the new seed's pool holds: nothing yet
    chain.scan()  # and the new seed's pool exported

    new = InvoiceFactory(code="near", total="10")
    index = new.deposit_address.derivation_index
    assert index > old.deposit_address.derivation_index  # never an index again
    assert new.deposit_address.address == transaction.implicit_account(
        dict(pool_public_keys(other, index, 1))[index]
    )
    chain.pay(old.amount_due, old.deposit_address.address)  # the old seed's account is still watched
    chain.scan(FINAL)
    old.refresh_from_db()
    assert old.status == Invoice.Status.DONE

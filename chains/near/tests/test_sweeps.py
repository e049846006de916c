"""NEAR sweeps on a fake node with the real Sweep and ChainTx rows: a paid deposit account is deleted into the
hot account by one DeleteAccount, stored before it is sent and re-sent as the same bytes after a crash;
never while its invoice is open or a payment to it is seen; done once final (never swept twice), failed
with an alert, rebuilt once after its block hash expired unknown to the node."""

from __future__ import annotations

import itertools
from decimal import Decimal

import pytest

from alerts.models import Alert
from chains.base import BlockRef, ChainTransfer
from chains.deposits import deposit_ingest
from chains.models import ChainTx, ChainTxStatus, PoolKey, Sweep, WatchRange
from chains.near import keys, sweeps
from chains.near.errors import NearNodeUnavailable
from chains.near.payouts import EXPIRED_MARGIN_BLOCKS
from chains.near.sweeps import near_sweep
from chains.near.tests.fake_node import HOT, SEED, FakeNearNode, near
from chains.near.transaction import DeleteAccount, b58encode
from chains.near.units import to_yocto
from invoices.models import Invoice
from payments.models import Deposit
from tests.factories import InvoiceFactory

__all__ = ["near"]  # the fixture
POOL = 5
HOT_KEY = keys.hot_key(SEED)[1].hex()  # the seed the pool is of
_receipts = itertools.count()


@pytest.fixture
def pool(near):
    """The development seed's first pool keys exported, and watched: invoices get their accounts."""
    PoolKey.objects.bulk_create(
        [
            PoolKey(family="near", seed_key=HOT_KEY, index=i, public_key=keys.pool_key(SEED, i)[1].hex())
            for i in range(POOL)
        ]
    )
    WatchRange.objects.create(code="near", watched_until=POOL - 1)
    return near


def _deposit(node: FakeNearNode, account: str, amount: Decimal, *, final: bool = True) -> Deposit:
    """A payment to `account` landed on the node and ingested as the scanner reports it."""
    if final:
        node.fund(account, to_yocto(amount))
    head = node.final_block()
    transfer = ChainTransfer(
        code="near",
        txid=f"receipt{next(_receipts)}",
        output_index=0,
        address=account,
        tag="",
        amount=amount,
        confirmations=1 if final else 0,
        block=BlockRef(head.height, head.hash) if final else None,
        final=final,
    )
    deposit = deposit_ingest(transfer)
    assert deposit is not None
    return deposit


def _invoice() -> tuple[Invoice, str, Decimal]:
    """A near invoice filled (pending): it, its deposit account and the amount due."""
    invoice = InvoiceFactory(code="near", total="10")
    assert isinstance(invoice, Invoice) and invoice.deposit_address and invoice.amount_due
    return invoice, invoice.deposit_address.address, invoice.amount_due


def _paid(node: FakeNearNode) -> str:
    """A near invoice paid in full and credited; its deposit account."""
    invoice, account, due = _invoice()
    _deposit(node, account, due)
    invoice.refresh_from_db()
    assert invoice.status in Invoice.FINAL
    return account


def _sweep() -> Sweep:
    return Sweep.objects.select_related("sweep_tx").get()


def _sent() -> ChainTx:
    """The open sweep's stored transaction."""
    chain_tx = _sweep().sweep_tx
    assert chain_tx is not None
    return chain_tx


def test_a_paid_account_is_deleted_into_the_hot_account_stored_then_sent(pool):
    _backend, node, signer = pool
    account = _paid(node)
    held = node.accounts[account].amount

    near_sweep("near")

    sweep = _sweep()
    assert (sweep.status, sweep.address, sweep.amount) == (Sweep.Status.SENT, account, Decimal(held) / 10**24)
    chain_tx = _sent()
    assert (chain_tx.kind, chain_tx.status, chain_tx.sender) == ("sweep", ChainTxStatus.BROADCAST, account)
    assert node.sent == [bytes.fromhex(chain_tx.raw)]
    tx = node.decoded()
    assert (tx.signer_id, tx.receiver_id) == (account, account)
    assert tx.nonce == node.accounts[account].keys[f"ed25519:{b58encode(bytes.fromhex(account))}"] + 1
    assert tx.actions == (DeleteAccount(HOT),)
    assert signer.requests[0]["purpose"] == "sweep"
    assert signer.requests[0]["index"] == sweep.derivation_index


def test_a_final_sweep_is_done_with_its_fee_and_never_swept_again(pool):
    _backend, node, _ = pool
    account = _paid(node)
    near_sweep("near")
    node.land(burnt=3 * 10**20)

    near_sweep("near")
    near_sweep("near")

    assert _sweep().status == Sweep.Status.DONE
    assert (_sent().status, _sent().fee_paid) == (ChainTxStatus.CONFIRMED, Decimal("0.0003"))
    assert account not in node.accounts and node.accounts[HOT].amount > 0
    assert Sweep.objects.count() == 1 and len(node.sent) == 1


def test_a_late_payment_recreating_the_account_is_swept_again(pool):
    _backend, node, _ = pool
    account = _paid(node)
    near_sweep("near")
    node.land()
    near_sweep("near")

    node.advance(5)
    _deposit(node, account, Decimal("1"))  # a transfer re-creates the implicit account
    near_sweep("near")

    assert list(Sweep.objects.order_by("pk").values_list("status", flat=True)) == ["done", "sent"]


def test_a_crash_between_store_and_send_resends_the_same_bytes(pool, monkeypatch):
    _backend, node, _ = pool
    _paid(node)
    send = node.send_tx

    def down(signed: bytes) -> None:
        raise NearNodeUnavailable("send_tx: connection refused")

    monkeypatch.setattr(node, "send_tx", down)
    with pytest.raises(NearNodeUnavailable):
        near_sweep("near")
    stored = _sent()
    assert (_sweep().status, stored.status, node.sent) == (Sweep.Status.SENT, ChainTxStatus.SIGNED, [])

    monkeypatch.setattr(node, "send_tx", send)
    near_sweep("near")

    assert node.sent == [bytes.fromhex(stored.raw)]
    assert ChainTx.objects.get().status == ChainTxStatus.BROADCAST


def test_an_account_with_an_open_invoice_is_not_swept(pool):
    _backend, node, _ = pool
    invoice, account, due = _invoice()
    _deposit(node, account, due / 2)  # underpaid: the client may pay the rest
    invoice.refresh_from_db()
    assert invoice.status not in Invoice.FINAL

    near_sweep("near")

    assert not Sweep.objects.exists() and node.sent == []


def test_an_account_with_a_seen_payment_is_not_swept_until_it_is_final(pool):
    _backend, node, _ = pool
    account = _paid(node)
    late = _deposit(node, account, Decimal("2"), final=False)

    near_sweep("near")
    assert not Sweep.objects.exists()

    _deposit(node, account, Decimal("2"))  # another payment, final; the seen one still pending
    Deposit.objects.filter(pk=late.pk).update(status=Deposit.Status.CONFIRMED)
    near_sweep("near")

    assert _sweep().status == Sweep.Status.SENT


def test_an_account_below_sweep_min_or_gone_is_not_swept(pool):
    _backend, node, _ = pool
    account = _paid(node)
    node.accounts[account].amount = to_yocto(Decimal("0.009"))

    near_sweep("near")
    del node.accounts[account]
    near_sweep("near")

    assert not Sweep.objects.exists()


def test_a_sweep_that_fails_on_chain_is_failed_with_an_alert(pool):
    _backend, node, _ = pool
    account = _paid(node)
    near_sweep("near")
    node.land(failure="DeleteAccountWithLargeState", burnt=10**20)

    near_sweep("near")

    assert (_sweep().status, _sent().status) == (Sweep.Status.FAILED, ChainTxStatus.FAILED)
    assert Alert.objects.filter(kind="sweep_failed", key=f"near:{account}").exists()


def test_a_sweep_not_final_yet_waits(pool):
    _backend, node, _ = pool
    _paid(node)
    near_sweep("near")
    node.land(final=False)

    near_sweep("near")

    assert _sweep().status == Sweep.Status.SENT and len(node.sent) == 1


def test_an_unknown_sweep_is_resent_until_it_expires_then_rebuilt_once(pool, monkeypatch):
    _backend, node, _ = pool
    _paid(node)
    near_sweep("near")
    first = _sent()

    node.advance(node.validity + EXPIRED_MARGIN_BLOCKS)  # the last block it may still land in
    near_sweep("near")
    assert node.sent == [bytes.fromhex(first.raw)] * 2  # re-sent, never rebuilt

    node.advance(1)
    near_sweep("near")  # expired unknown: READY again
    first.refresh_from_db()
    assert (_sweep().status, _sweep().sweep_tx, first.status) == (
        Sweep.Status.READY,
        None,
        ChainTxStatus.FAILED,
    )

    near_sweep("near")  # built anew from the final block
    near_sweep("near")

    second = _sent()
    assert second.txid != first.txid
    assert node.sent == [bytes.fromhex(first.raw)] * 2 + [bytes.fromhex(second.raw)] * 2
    assert ChainTx.objects.count() == 2


def test_the_beat_task_sweeps_every_near_code(pool, monkeypatch):
    _backend, node, _ = pool
    _paid(node)
    monkeypatch.setattr(sweeps, "on_sandbox_backend", lambda code: False)

    sweeps.near_sweep_all()

    assert _sweep().status == Sweep.Status.SENT

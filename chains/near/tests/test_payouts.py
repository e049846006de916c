"""NEAR payouts on a fake node: one Transfer from the hot account, its nonce the hot key's next, one payout
at a time; a short hot account waits, a named recipient that does not exist is refused; the fee rounds up;
a re-send the node knows counts as sent, one refused as expired is EXPIRED; decided at finality; rebuilt
only once its block hash is past the validity period (or gone from the node)."""

from __future__ import annotations

import base64
import json
from decimal import Decimal

import pytest

from chains.base import FeeQuote, InsufficientFunds, Outcome, Payment, PayoutRefused, SignedTx
from chains.models import ChainTx, ChainTxStatus
from chains.near import transaction
from chains.near.payouts import (
    ACCOUNT_CREATION_CHARGE,
    EXPIRED_MARGIN_BLOCKS,
    HotAccountBusy,
    fee_near,
    fee_yocto,
    transfer_gas,
)
from chains.near.tests.fake_node import HOT, HOT_KEY, NEAR, near, pool_account
from chains.near.transaction import Transaction, Transfer
from payments.models import Company
from tests.chain import fund
from tests.factories import CompanyFactory
from withdrawals import payouts
from withdrawals.rules import WithdrawalItem
from withdrawals.services import withdrawal_request

RECIPIENT = pool_account(7)  # an implicit account: created by the transfer when it does not exist
NAMED = "shop.near"
__all__ = ["near"]  # the fixture


def _quote(backend) -> FeeQuote:
    return backend.quote_fee("near")


def _payment(to: str = RECIPIENT, amount: str = "1.5") -> Payment:
    return Payment(key="withdrawal:abc", to=to, tag="", amount=Decimal(amount))


def _signed(near, to: str = RECIPIENT, amount: str = "1.5") -> SignedTx:
    backend, _node, signer = near
    return signer.sign(backend.build("near", [_payment(to, amount)], _quote(backend)))


def _tx(payload: str) -> Transaction:
    return Transaction.decode(base64.b64decode(json.loads(payload)["tx"]))


def test_quote_is_the_gas_price(near):
    backend, node, _ = near

    quote = backend.quote_fee("near")

    assert (quote.rate, quote.unit, quote.source) == (Decimal(node.price), "yocto/gas", "gas_price")


def test_build_pays_one_transfer_from_the_hot_account_with_the_next_nonce(near):
    backend, node, _ = near
    node.fund(HOT, 10 * NEAR, nonce=41)
    node.fund(RECIPIENT, NEAR)

    unsigned = backend.build("near", [_payment()], _quote(backend))

    tx = _tx(unsigned.payload)
    assert json.loads(unsigned.payload)["purpose"] == "payout"
    assert json.loads(unsigned.payload)["ref"] == "withdrawal:abc"
    assert (tx.signer_id, tx.receiver_id, tx.nonce) == (HOT, RECIPIENT, 42)
    assert tx.public_key == HOT_KEY[1]
    assert tx.actions == (Transfer(15 * 10**23),)
    assert transaction.b58encode(tx.block_hash) == node.final_block().hash
    assert (unsigned.sender, unsigned.nonce) == (HOT, 42)
    assert unsigned.fee == fee_near(fee_yocto(transfer_gas(False), node.price))


def test_a_transfer_creating_an_implicit_account_pays_its_creation(near):
    backend, node, _ = near
    node.fund(HOT, 10 * NEAR)

    unsigned = backend.build("near", [_payment()], _quote(backend))

    creation = fee_yocto(transfer_gas(True), node.price) + ACCOUNT_CREATION_CHARGE
    assert unsigned.fee == fee_near(creation)
    assert unsigned.fee > fee_near(fee_yocto(transfer_gas(False), node.price))


@pytest.mark.parametrize(
    ("gas", "price", "yocto"),
    [
        (10, 1, 12),  # 12 exactly
        (1, 1, 2),  # 1.2 rounds up
        (3, 7, 26),  # 25.2 rounds up
    ],
)
def test_the_fee_rounds_up(gas, price, yocto):
    assert fee_yocto(gas, price) == yocto


def test_fee_in_near_rounds_up_to_18_places():
    assert fee_near(1) == Decimal("0.000000000000000001")
    assert fee_near(10**6) == Decimal("0.000000000000000001")
    assert fee_near(10**6 + 1) == Decimal("0.000000000000000002")


def test_a_named_recipient_that_does_not_exist_is_refused(near):
    backend, node, _ = near
    node.fund(HOT, 10 * NEAR)

    with pytest.raises(PayoutRefused, match="does not exist"):
        backend.build("near", [_payment(to=NAMED)], _quote(backend))


def test_a_named_recipient_that_exists_is_paid(near):
    backend, node, _ = near
    node.fund(HOT, 10 * NEAR)
    node.fund(NAMED, NEAR)

    unsigned = backend.build("near", [_payment(to=NAMED)], _quote(backend))

    assert _tx(unsigned.payload).receiver_id == NAMED


def test_a_recipient_that_is_no_account_id_is_refused(near):
    backend, node, _ = near
    node.fund(HOT, 10 * NEAR)

    with pytest.raises(PayoutRefused, match="not lowercase"):
        backend.build("near", [_payment(to="Shop.Near")], _quote(backend))


def test_a_hot_account_that_does_not_exist_waits_to_be_funded(near):
    backend, _node, _ = near

    with pytest.raises(InsufficientFunds, match="does not exist"):
        backend.build("near", [_payment()], _quote(backend))


def test_a_hot_account_short_of_amount_fee_and_storage_waits(near):
    backend, node, _ = near
    node.fund(HOT, 15 * 10**23, nonce=1)  # exactly the amount: nothing left for the fee and the storage
    node.fund(RECIPIENT, NEAR)

    with pytest.raises(InsufficientFunds, match="storage"):
        backend.build("near", [_payment()], _quote(backend))


def test_the_storage_staking_is_kept_by_the_hot_account(near):
    backend, node, _ = near
    node.fund(RECIPIENT, NEAR)
    fee = fee_yocto(transfer_gas(False), node.price)
    storage = (
        node.accounts.setdefault(HOT, type(node.accounts.get(RECIPIENT))(amount=0)).storage_usage * 10**19
    )
    node.fund(HOT, 15 * 10**23 + fee + storage)

    backend.build("near", [_payment()], _quote(backend))  # just enough

    node.accounts[HOT].amount -= 1
    with pytest.raises(InsufficientFunds):
        backend.build("near", [_payment()], _quote(backend))


def test_a_payout_waits_while_an_earlier_one_is_not_settled(near):
    backend, node, _ = near
    node.fund(HOT, 10 * NEAR)
    signed = _signed(near)
    ChainTx.objects.create(code="near", txid=signed.txid, raw=signed.raw, fee=signed.fee, sender=HOT)

    with pytest.raises(HotAccountBusy) as held:
        backend.build("near", [_payment()], _quote(backend))

    assert held.value.alerts is False
    ChainTx.objects.filter(txid=signed.txid).update(status=ChainTxStatus.CONFIRMED)
    backend.build("near", [_payment()], _quote(backend))  # settled: the next one goes


def test_broadcast_sends_the_stored_bytes(near):
    backend, node, _ = near
    node.fund(HOT, 10 * NEAR)
    signed = _signed(near)

    outcome = backend.broadcast("near", signed)

    assert outcome == Outcome.ACCEPTED
    assert node.sent == [bytes.fromhex(signed.raw)]


def test_a_resend_the_node_knows_counts_as_sent(near):
    backend, node, _ = near
    node.fund(HOT, 10 * NEAR)
    signed = _signed(near)
    backend.broadcast("near", signed)
    node.land(signed.txid)
    node.refuse = "InvalidNonce"  # its nonce is used: by itself

    outcome = backend.broadcast("near", signed)

    assert outcome == Outcome.ALREADY_MINED


def test_a_refusal_as_expired_is_expired_and_any_other_rejected(near):
    backend, node, _ = near
    node.fund(HOT, 10 * NEAR)
    signed = _signed(near)

    node.refuse = "Expired"
    assert backend.broadcast("near", signed) == Outcome.EXPIRED
    node.refuse = "NotEnoughBalance"
    assert backend.broadcast("near", signed) == Outcome.REJECTED


def test_tx_status_is_final_with_what_it_burnt(near):
    backend, node, _ = near
    node.fund(HOT, 10 * NEAR)
    signed = _signed(near)
    backend.broadcast("near", signed)
    node.land(signed.txid, burnt=4 * 10**20)
    node.advance(2)

    status = backend.tx_status("near", signed.txid)

    assert (status.known, status.final, status.failed) == (True, True, False)
    assert status.confirmations == 3
    assert status.fee_paid == Decimal("0.0004")
    assert status.block is not None and status.block.height == node.height - 2


def test_tx_status_of_a_failed_receipt_is_failed(near):
    backend, node, _ = near
    node.fund(HOT, 10 * NEAR)
    signed = _signed(near)
    backend.broadcast("near", signed)
    node.land(signed.txid, failure="AccountDoesNotExist")

    status = backend.tx_status("near", signed.txid)

    assert (status.failed, status.final) == (True, True)
    assert status.failure == "failed (AccountDoesNotExist)"


def test_tx_status_not_final_yet_and_unknown(near):
    backend, node, _ = near
    node.fund(HOT, 10 * NEAR)
    signed = _signed(near)

    assert backend.tx_status("near", signed.txid).known is False
    backend.broadcast("near", signed)
    node.land(signed.txid, final=False)
    assert backend.tx_status("near", signed.txid).final is False


def test_expired_only_past_the_validity_period_and_margin(near):
    backend, node, _ = near
    node.fund(HOT, 10 * NEAR)
    signed = _signed(near)
    built_at = node.height

    node.advance(node.validity + EXPIRED_MARGIN_BLOCKS)
    assert node.height - built_at == node.validity + EXPIRED_MARGIN_BLOCKS
    assert backend.expired("near", signed.raw) is False
    node.advance(1)
    assert backend.expired("near", signed.raw) is True


def test_a_block_hash_the_node_does_not_know_is_never_taken_for_expired(near):
    # Garbage collected, or a node behind the one that gave the hash: a rebuild beside a transaction that
    # can still land would pay twice.
    backend, node, _ = near
    node.fund(HOT, 10 * NEAR)
    signed = _signed(near)

    node.advance(node.validity + EXPIRED_MARGIN_BLOCKS + 1)
    node.forget_before = node.height

    assert backend.expired("near", signed.raw) is False


def test_spendable_is_the_balance_less_the_storage_staking(near):
    backend, node, _ = near
    assert backend.spendable("near") == 0
    node.fund(HOT, 2 * NEAR)

    spendable = backend.spendable("near")

    assert spendable == Decimal(2) - Decimal(node.accounts[HOT].storage_usage) * Decimal("1e-5")


def test_no_fee_replacement(near):
    backend, _node, _ = near

    assert backend.bump("near", "x", FeeQuote(Decimal(1), "yocto/gas", "gas_price")) is None
    assert backend.child("near", "x", FeeQuote(Decimal(1), "yocto/gas", "gas_price")) is None


def test_a_payout_expired_unknown_to_the_node_is_paid_again_once(near):
    _backend, node, _ = near
    node.fund(HOT, 10 * NEAR)
    node.fund(RECIPIENT, NEAR)
    company = CompanyFactory()
    assert isinstance(company, Company)
    fund(company, "near", Decimal("5"))
    [withdrawal] = withdrawal_request(
        company=company, items=[WithdrawalItem(asset="near", amount=Decimal("1.5"), to=RECIPIENT, tag="")]
    )
    [first] = payouts.payout_plan("near")  # stored; its broadcast never ran (a worker killed)

    node.advance(node.validity + EXPIRED_MARGIN_BLOCKS + 1)
    payouts.payout_monitor("near")

    assert ChainTx.objects.get(pk=first).status == ChainTxStatus.FAILED
    second = ChainTx.objects.exclude(pk=first).get()
    assert second.status == ChainTxStatus.SIGNED
    assert second.withdrawal_links.get().withdrawal_id == withdrawal.pk
    # The access key's next nonce again: the expired one never landed, and never can (its block hash).
    assert _nonce(second) == _nonce(ChainTx.objects.get(pk=first))
    payouts.payout_monitor("near")
    assert ChainTx.objects.count() == 2


def _nonce(chain_tx: ChainTx) -> int:
    return transaction.decode_signed(bytes.fromhex(chain_tx.raw))[0].nonce

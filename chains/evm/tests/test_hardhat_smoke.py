"""Smoke tests over HTTP against a real hardhat@2 node: what the in-process chain cannot show. A node that
answers "Known transaction" and "nonce too low", a base-fee spike that leaves a payout stuck until it is
replaced with the same nonce, a transaction the node drops and Kassa sends again, deposits read without
eth_getBlockReceipts (hardhat has none), and a reorg through evm_snapshot/evm_revert."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import pytest

from chains.base import Outcome, SignedTx
from chains.evm.node import hot_address
from chains.models import ChainTx, ChainTxStatus
from payments.models import Deposit
from tests.chain import fund
from tests.evm import EvmChain
from tests.factories import CompanyFactory, InvoiceFactory
from tests.hardhat_node import HardhatNode, hardhat_node
from withdrawals import payouts
from withdrawals.models import Withdrawal
from withdrawals.rules import WithdrawalItem
from withdrawals.services import withdrawal_request

pytestmark = pytest.mark.hardhat
RECEIVER = "0x00000000000000000000000000000000000000aa"


@pytest.fixture(scope="module")
def node() -> Iterator[HardhatNode]:
    with hardhat_node() as running:
        yield running


@pytest.fixture
def chain(node, settings, db) -> Iterator[EvmChain]:
    snapshot = node.w3.provider.make_request("evm_snapshot", [])["result"]  # each test on the same start
    running = EvmChain(node.w3, node.url)
    running.deploy_token()
    settings.CHAIN_BACKENDS = {"eth": "evm", "usdterc20": "evm"}
    settings.CHAIN_NODES = running.nodes()
    running.backend()
    running.scan()
    yield running
    node.w3.provider.make_request("evm_setAutomine", [True])
    node.w3.provider.make_request("evm_revert", [snapshot])


def _automine(chain: EvmChain, on: bool) -> None:
    chain.w3.provider.make_request("evm_setAutomine", [on])  # type: ignore[arg-type]


def _withdraw(code: str, amount: str) -> Withdrawal:
    company = CompanyFactory()
    fund(company, code, "1000")
    [withdrawal] = withdrawal_request(
        company=company, items=[WithdrawalItem(asset=code, amount=Decimal(amount), to=RECEIVER, tag="")]
    )
    return withdrawal


def _send_due(code: str) -> ChainTx:
    payouts.payout_plan(code)
    payouts.payout_monitor(code, plan=False)  # the broadcast task's work
    return ChainTx.objects.filter(code=code).latest("pk")


def test_known_transaction_and_nonce_too_low_are_success(chain):
    chain.fund_hot(eth="10", tokens="100")
    withdrawal = _withdraw("usdterc20", "25")
    _automine(chain, False)
    stored = _send_due("usdterc20")
    signed = SignedTx(txid=stored.txid, raw=stored.raw, fee=stored.fee)
    backend = chain.backend()
    assert chain.w3.eth.get_transaction(stored.txid)["blockNumber"] is None  # pending
    assert backend.broadcast("usdterc20", signed) == Outcome.ALREADY_KNOWN  # hardhat: "Known transaction"
    chain.mine(1)
    assert backend.broadcast("usdterc20", signed) == Outcome.ALREADY_MINED  # hardhat: "nonce too low"
    chain.mine(12)
    payouts.payout_monitor("usdterc20")
    withdrawal.refresh_from_db()
    assert withdrawal.status == "done" and withdrawal.txid == stored.txid
    assert chain.token_balance(RECEIVER) == Decimal(25)


def test_a_fee_spike_leaves_a_payout_stuck_until_a_same_nonce_replacement_pays_once(chain, settings):
    settings.PAYOUT_BUMP_AFTER_SECONDS = 0
    settings.CHAIN_NODES = chain.nodes(fee_cap_gwei="500")
    chain.fund_hot(eth="10")
    withdrawal = _withdraw("eth", "1")
    _automine(chain, False)
    original = _send_due("eth")
    # The next block's base fee is far over what the payout offers: it cannot be mined.
    chain.w3.provider.make_request("hardhat_setNextBlockBaseFeePerGas", [hex(100 * 10**9)])  # type: ignore[arg-type]
    chain.mine(1)
    assert chain.w3.eth.get_transaction(original.txid)["blockNumber"] is None

    payouts.payout_monitor("eth", plan=False)  # stuck: replaced, same nonce, higher fees, sent
    replacement = ChainTx.objects.get(kind=ChainTx.Kind.BUMP)
    assert (replacement.replaces_id, replacement.nonce) == (original.pk, original.nonce)
    chain.mine(1)
    assert chain.w3.eth.get_transaction_receipt(replacement.txid)["status"] == 1
    chain.mine(12)
    payouts.payout_monitor("eth")
    payouts.payout_monitor("eth")
    withdrawal.refresh_from_db()
    original.refresh_from_db()
    assert withdrawal.status == "done" and withdrawal.txid == replacement.txid
    assert original.status == ChainTxStatus.REPLACED
    assert chain.balance(RECEIVER) == Decimal(1)  # paid once


def test_a_dropped_payout_is_sent_again_with_the_same_bytes(chain):
    chain.fund_hot(eth="10")
    withdrawal = _withdraw("eth", "2")
    _automine(chain, False)
    stored = _send_due("eth")
    chain.w3.provider.make_request("hardhat_dropTransaction", [stored.txid])  # type: ignore[arg-type]
    assert not chain.backend().tx_status("eth", stored.txid).known

    payouts.payout_monitor("eth", plan=False)  # not known any more: the stored bytes again
    assert chain.backend().tx_status("eth", stored.txid).known
    _automine(chain, True)
    chain.mine(13)
    payouts.payout_monitor("eth")
    withdrawal.refresh_from_db()
    assert withdrawal.status == "done" and withdrawal.txid == stored.txid
    assert ChainTx.objects.count() == 1 and chain.balance(RECEIVER) == Decimal(2)


def test_deposits_without_block_receipts_and_a_reorg(chain):
    invoice = InvoiceFactory(code="eth", total="10")
    address = invoice.deposit_address.address
    with chain.reorg():
        dropped = chain.pay(address, "0.001")
        chain.scan()
        assert Deposit.objects.get(txid=dropped).status == "seen"
    chain.mine(3)
    chain.pay(hot_address(), "0.5")  # the payer's nonce moves on: the next payment is another transaction
    paid = chain.pay(address, invoice.amount_due)
    chain.scan(12)
    assert Deposit.objects.get(txid=dropped).status == "dropped"
    assert Deposit.objects.get(txid=paid).status == "confirmed"
    invoice.refresh_from_db()
    assert invoice.status == "done"

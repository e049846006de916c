"""TRON sweeps on the devnet: a credited deposit's trx or USDT reaches the hot address, its address readied
first as the energy mode says (a TRX top-up to burn, or activation and energy lent from staked TRX and
taken back), each step stored before it is sent and decided only once solidified; every TRX burnt is
booked to the house account; a sweep that runs out of energy or that the token refuses is booked,
alerted and never retried by itself; a stored step is re-sent as the same bytes, and built again only
once it expired unknown to the node."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest

from alerts.models import Alert
from chains.derivation import derive_internal_address
from chains.models import ChainTx, ChainTxStatus, HouseEntry, Sweep
from chains.tron import sweeps as tron_sweeps
from chains.tron.node import TronNode
from chains.tron.signer import TronJournal, get_signer
from chains.tron.sweeps import tron_sweep
from chains.tron.units import from_units
from payments.models import Deposit
from tests.chain import TronChain
from tests.factories import InvoiceFactory
from tests.tron_devnet.fixtures import tron_devnet  # noqa: F401

SOLID = 19  # the devnet solidifies a block 19 blocks behind the head
SUN = 1_000_000
HOT = derive_internal_address("tron", 0)
TOPUP, READY, SENT = Sweep.Status.TOPUP, Sweep.Status.READY, Sweep.Status.SENT
DONE, FAILED = Sweep.Status.DONE, Sweep.Status.FAILED


@pytest.fixture
def chain(settings, db, tron_devnet, monkeypatch) -> TronChain:  # noqa: F811
    running = TronChain(tron_devnet)
    monkeypatch.setattr(get_signer(), "journal", TronJournal())  # each test's top-ups and days on their own
    settings.CHAIN_BACKENDS = {"trx": "tron", "trc20usdt": "tron"}
    settings.CHAIN_NODES = running.nodes()
    running.keep_time()
    running.devnet.fund(HOT, sun=1_000 * SUN)  # the hot address pays top-ups and activations
    running.scan(1)  # the cursor starts here
    return running


def _delegating(chain: TronChain, settings, *, stake: int) -> str:
    """energy "delegate" from the seed's resource account (m/44'/195'/0'/1/1), `stake` TRX staked on it."""
    lender = derive_internal_address("tron", 1)
    settings.CHAIN_NODES = chain.nodes(energy="delegate", resource_address=lender)
    chain.devnet.fund(lender, sun=20_000 * SUN)
    chain.mine()
    if stake:
        chain.devnet.stake(lender, stake * SUN)
    return lender


def _credited(chain: TronChain, code: str, total: str) -> str:
    """An invoice of `code` paid and credited (its block solidified); its deposit address."""
    invoice = InvoiceFactory(code=code, total=total)
    address = invoice.deposit_address.address
    (chain.pay_token if code == "trc20usdt" else chain.pay)(address, invoice.amount_due)
    chain.scan(1)
    chain.scan(SOLID)
    assert Deposit.objects.get(address=address).status == Deposit.Status.CONFIRMED
    return address


def _solid(chain: TronChain) -> None:
    """Every transaction sent so far in a solidified block."""
    chain.mine(SOLID + 1)


def _fee(chain: TronChain, chain_tx: ChainTx) -> Decimal:
    return from_units(int(chain.devnet.info_by_id(chain_tx.txid).get("fee", 0)))


def test_a_token_deposit_is_topped_up_then_swept_with_every_trx_burnt_booked(chain):
    address = _credited(chain, "trc20usdt", "30")
    held = chain.devnet.token_balance(address)
    hot_before = chain.devnet.token_balance(HOT)

    tron_sweep("trc20usdt")  # opened: the address must be readied first
    sweep = Sweep.objects.get()
    assert (sweep.status, sweep.amount, sweep.address) == (TOPUP, from_units(held), address)
    tron_sweep("trc20usdt")  # the TRX to burn: signed, stored, sent (it activates the address too)
    sweep.refresh_from_db()
    topup = sweep.topup_tx
    assert topup is not None and (topup.kind, topup.sweep_id) == (ChainTx.Kind.TOPUP, sweep.pk)
    chain.scan(SOLID)  # mined, one short of solid: the scan sees the top-up reach a deposit address
    tron_sweep("trc20usdt")
    assert Sweep.objects.get().topup_tx_id == topup.pk  # decided at finality, not before
    chain.scan(1)
    tron_sweep("trc20usdt")  # the top-up is final: booked, and the next round decides again
    tron_sweep("trc20usdt")  # nothing lacks: the sweep is measured, signed, stored and sent
    sweep.refresh_from_db()
    assert sweep.status == SENT and sweep.topup_tx is None
    _solid(chain)
    tron_sweep("trc20usdt")

    sweep.refresh_from_db()
    assert sweep.status == DONE
    assert chain.devnet.token_balance(HOT) - hot_before == held
    assert chain.devnet.token_balance(address) == 0
    receipt = chain.devnet.info_by_id(sweep.sweep_tx.txid)
    assert receipt["receipt"]["result"] == "SUCCESS" and receipt["receipt"]["energy_fee"] > 0  # burnt
    steps = ChainTx.objects.filter(sweep=sweep).order_by("pk")
    assert [step.kind for step in steps] == [ChainTx.Kind.TOPUP, ChainTx.Kind.SWEEP]
    assert {step.status for step in steps} == {ChainTxStatus.CONFIRMED}
    booked = {entry.chain_tx_id: entry.amount for entry in HouseEntry.objects.all()}
    assert booked == {step.pk: _fee(chain, step) for step in steps}
    assert booked[topup.pk] == Decimal("1.1")  # the activation: getCreateNewAccountFee... + its bytes
    assert set(HouseEntry.objects.values_list("coin", flat=True)) == {"trx"}
    assert not Deposit.objects.filter(txid=topup.txid).exists()  # the house's top-up is no payment
    tron_sweep("trc20usdt")
    assert Sweep.objects.count() == 1  # nothing new to sweep


def test_with_delegated_energy_the_address_is_activated_lent_energy_swept_and_the_energy_taken_back(
    chain, settings
):
    lender = _delegating(chain, settings, stake=9_000)
    address = _credited(chain, "trc20usdt", "25")
    held = chain.devnet.token_balance(address)
    hot_trx, hot_usdt = chain.devnet.balance(HOT), chain.devnet.token_balance(HOT)

    kinds = []
    for _ in range(4):  # activation, delegation, sweep: each stored and sent, then final
        tron_sweep("trc20usdt")
        tron_sweep("trc20usdt")
        kinds.append(ChainTx.objects.order_by("pk").last().kind)
        _solid(chain)
    tron_sweep("trc20usdt")  # the undelegation is final

    sweep = Sweep.objects.get()
    assert kinds == ["activate", "delegate", "sweep", "undelegate"]
    assert (sweep.status, sweep.delegated, sweep.lender) == (DONE, 0, lender)
    assert (chain.devnet.token_balance(HOT) - hot_usdt, chain.devnet.token_balance(address)) == (held, 0)
    receipt = chain.devnet.info_by_id(sweep.sweep_tx.txid)["receipt"]
    assert receipt["result"] == "SUCCESS" and "energy_fee" not in receipt  # the lent energy paid it all
    account = chain.devnet.post("wallet/getaccount", {"address": lender, "visible": True})
    assert "delegated_frozenV2_balance_for_energy" not in account["account_resource"]  # all of it back
    activation = ChainTx.objects.get(kind=ChainTx.Kind.ACTIVATE)
    assert hot_trx - chain.devnet.balance(HOT) == 1_100_000  # only the activation cost the hot address
    assert list(HouseEntry.objects.values_list("chain_tx", "amount")) == [(activation.pk, Decimal("1.1"))]


def test_a_lender_short_of_stake_holds_the_sweep_with_an_alert_until_it_stakes_more(chain, settings):
    lender = _delegating(chain, settings, stake=0)
    _credited(chain, "trc20usdt", "25")
    tron_sweep("trc20usdt")
    tron_sweep("trc20usdt")  # activation
    _solid(chain)
    tron_sweep("trc20usdt")

    tron_sweep("trc20usdt")  # the delegation: nothing staked to lend

    sweep = Sweep.objects.get()
    assert sweep.status == TOPUP and sweep.topup_tx is None
    assert "staked energy" in sweep.last_error and lender in sweep.last_error
    alert = Alert.objects.get(kind="tron_energy_short", resolved_at__isnull=True)
    assert "stake more TRX" in alert.message
    assert not ChainTx.objects.filter(kind=ChainTx.Kind.DELEGATE).exists()

    chain.devnet.stake(lender, 9_000 * SUN)
    tron_sweep("trc20usdt")

    assert Sweep.objects.get().topup_tx.kind == ChainTx.Kind.DELEGATE
    assert not Alert.objects.filter(kind="tron_energy_short", resolved_at__isnull=True).exists()


def test_a_sweep_that_runs_out_of_energy_is_booked_alerted_and_never_retried(chain, monkeypatch):
    # A fee_limit below the call's energy: java-tron includes the call, burns the fee_limit and moves nothing.
    monkeypatch.setattr(tron_sweeps, "ENERGY_MARGIN", Decimal("0.5"))
    address = _credited(chain, "trc20usdt", "30")
    held = chain.devnet.token_balance(address)
    tron_sweep("trc20usdt")
    tron_sweep("trc20usdt")
    _solid(chain)
    tron_sweep("trc20usdt")
    tron_sweep("trc20usdt")
    _solid(chain)

    tron_sweep("trc20usdt")
    for _ in range(3):
        tron_sweep("trc20usdt")
        _solid(chain)

    sweep = Sweep.objects.get()
    assert sweep.status == FAILED and "OUT_OF_ENERGY" in sweep.last_error
    assert chain.devnet.token_balance(address) == held  # the funds stay where they are
    assert ChainTx.objects.filter(kind=ChainTx.Kind.SWEEP).count() == 1  # never sent again
    assert HouseEntry.objects.get(chain_tx=sweep.sweep_tx).amount == _fee(chain, sweep.sweep_tx) > 0
    alert = Alert.objects.get(kind="sweep_failed")
    assert address in alert.message and "OUT_OF_ENERGY" in alert.message


def test_a_sweep_from_an_address_with_no_trx_and_no_energy_fails_out_of_energy_alerted_not_looped(
    chain, settings, monkeypatch
):
    # A node whose estimate says the call needs no energy: the address is activated and nothing more, and
    # the sweep goes out with no TRX, no energy and a fee_limit of 0. java-tron includes it, as a failure.
    _delegating(chain, settings, stake=9_000)
    address = _credited(chain, "trc20usdt", "30")
    real = TronNode.trigger_constant
    monkeypatch.setattr(
        TronNode,
        "trigger_constant",
        lambda node, *args, **kwargs: dataclasses.replace(real(node, *args, **kwargs), energy_used=0),
    )
    for _ in range(5):
        tron_sweep("trc20usdt")
        _solid(chain)

    sweep = Sweep.objects.get()
    assert sweep.status == FAILED and "OUT_OF_ENERGY" in sweep.last_error
    assert [step.kind for step in ChainTx.objects.order_by("pk")] == ["activate", "sweep"]  # sent once
    assert (chain.devnet.balance(address), sweep.delegated) == (0, 0)  # nothing lent, nothing to burn
    receipt = chain.devnet.info_by_id(sweep.sweep_tx.txid)["receipt"]
    assert receipt["result"] == "OUT_OF_ENERGY"
    assert Alert.objects.filter(kind="sweep_failed", message__contains="OUT_OF_ENERGY").count() == 1


def test_a_blacklisted_deposit_address_fails_its_sweep_before_anything_is_signed(chain):
    address = _credited(chain, "trc20usdt", "30")
    chain.devnet.blacklist(address)
    chain.mine()

    tron_sweep("trc20usdt")
    tron_sweep("trc20usdt")
    tron_sweep("trc20usdt")

    sweep = Sweep.objects.get()
    assert sweep.status == FAILED and "refuses the transfer" in sweep.last_error
    assert not ChainTx.objects.exists()  # not a sun burnt on a transfer the token refuses
    assert Alert.objects.filter(kind="sweep_failed", message__contains=address).exists()


def test_a_trx_deposit_is_swept_whole_with_no_step_before(chain):
    address = _credited(chain, "trx", "50")
    held = chain.devnet.balance(address)
    hot_before = chain.devnet.balance(HOT)

    tron_sweep("trx")  # opened READY: the address pays its transfer with its free bandwidth
    assert (Sweep.objects.get().status, Sweep.objects.get().amount) == (READY, from_units(held))
    tron_sweep("trx")
    _solid(chain)
    tron_sweep("trx")

    sweep = Sweep.objects.get()
    assert sweep.status == DONE and ChainTx.objects.get().kind == ChainTx.Kind.SWEEP
    assert chain.devnet.balance(HOT) - hot_before == held
    assert chain.devnet.balance(address) == 0
    assert not HouseEntry.objects.exists()  # free bandwidth: nothing burnt


def _stored_not_sent(chain: TronChain, monkeypatch) -> ChainTx:
    """A top-up signed and stored, then the worker dies before it sends it."""
    _credited(chain, "trc20usdt", "30")
    tron_sweep("trc20usdt")
    with monkeypatch.context() as crash:
        crash.setattr(tron_sweeps, "sweep_send", lambda *args: None)
        tron_sweep("trc20usdt")
    stored = Sweep.objects.get().topup_tx
    assert stored.status == ChainTxStatus.SIGNED and chain.devnet.info_by_id(stored.txid) == {}
    return stored


def test_a_step_stored_but_never_sent_is_sent_as_the_same_bytes(chain, monkeypatch):
    stored = _stored_not_sent(chain, monkeypatch)

    tron_sweep("trc20usdt")
    chain.mine()

    assert chain.devnet.info_by_id(stored.txid)["receipt"]  # the very transaction that was stored
    assert ChainTx.objects.get().status == ChainTxStatus.BROADCAST


def test_a_step_that_expired_unsent_is_decided_again_and_its_successor_lands(chain, monkeypatch):
    stored = _stored_not_sent(chain, monkeypatch)
    chain.devnet.mine(skip_seconds=12 * 60)  # past its expiration (10 min) and the clocks' margin

    tron_sweep("trc20usdt")  # the node never had it, and no block can include it now

    stored.refresh_from_db()
    assert stored.status == ChainTxStatus.FAILED and "expired" in stored.last_error
    assert Sweep.objects.get().topup_tx is None
    assert chain.devnet.balance(Sweep.objects.get().address) == 0
    tron_sweep("trc20usdt")  # decided again: a new top-up
    successor = Sweep.objects.get().topup_tx
    assert successor.txid != stored.txid and successor.status == ChainTxStatus.BROADCAST
    _solid(chain)
    for _ in range(2):
        tron_sweep("trc20usdt")
    _solid(chain)
    tron_sweep("trc20usdt")
    assert Sweep.objects.get().status == DONE
    assert not HouseEntry.objects.filter(chain_tx=stored).exists()  # it burnt nothing

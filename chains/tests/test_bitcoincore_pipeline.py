"""ltc on a real regtest litecoind through the bitcoincore backend and the one ingestion and payout pipeline:
deposits seen, confirmed and credited once, reorgs and double-spends, payouts batched, crashes between the
steps, a short payout wallet, a fee over the cap, and a deposit beyond the first watched range."""

from __future__ import annotations

import itertools
import json
from decimal import Decimal
from types import SimpleNamespace

import pytest
from bip_utils import Base58Decoder, Base58Encoder
from django.core.management import call_command

from alerts.models import Alert, AlertStatus
from chains.backend import get_backend
from chains.base import SignedTx
from chains.derivation import development_xpub
from chains.models import ChainCursor, ChainTx, HouseEntry, PayoutWallet, WatchRange
from chains.scanning import WATCH_AHEAD, chain_scan
from chains.status import chain_status
from chains.tasks import chain_settled_watch_all
from core.assets import get_asset
from invoices.models import Invoice
from payments.ledger import ledger_verify
from payments.models import Account, Deposit, DerivationCounter
from tests.chain import fund
from tests.factories import CompanyFactory, InvoiceFactory, StaticDepositAddressFactory
from tests.nodes import Miner, free_port, litecoind_regtest
from webhooks.models import WebhookEvent
from withdrawals import payouts
from withdrawals.models import Withdrawal
from withdrawals.rules import WithdrawalItem
from withdrawals.services import withdrawal_request

pytestmark = pytest.mark.litecoind
_wallets = itertools.count(1)


@pytest.fixture(scope="module")
def node():
    with litecoind_regtest() as running:
        yield running


@pytest.fixture(scope="module")
def miner(node):
    return Miner(node)


@pytest.fixture
def ltc(node, miner, settings, db):
    """ltc on the node, with a fresh deposit wallet (Kassa creates it) and a fresh payout wallet."""
    n = next(_wallets)
    settings.CHAIN_BACKENDS = {"ltc": "bitcoincore"}
    settings.CHAIN_NODES = {
        "ltc": {
            "url": node.url,
            "network": "regtest",
            "deposit_wallet": f"deposits-{n}",
            "payout_wallet": f"payouts-{n}",
            "fee_fallback": "0.0002",
        }
    }
    node.rpc.call("createwallet", f"payouts-{n}", False, False, "", False, False)
    chain_scan("ltc")  # creates the watch-only deposit wallet and imports the first range
    return SimpleNamespace(node=node, miner=miner, payouts=node.rpc.wallet(f"payouts-{n}"))


def _scan_after(ltc, blocks: int = 0) -> None:
    if blocks:
        ltc.miner.mine(blocks)
    chain_scan("ltc")


def _events(family: str, object_id: str) -> list[dict]:
    rows = WebhookEvent.objects.filter(family=family, object_id=object_id).order_by("created_at", "pk")
    return [json.loads(row.body) for row in rows]


def _available(company) -> Decimal:
    account = Account.objects.filter(company=company, code="ltc").first()
    return account.available if account else Decimal(0)


def test_a_deposit_is_seen_at_zero_confirmations_then_credited_once(ltc):
    invoice = InvoiceFactory(code="ltc", total="10")
    address = invoice.deposit_address.address
    assert address.startswith("rltc1")
    needed = get_asset("ltc").confirmations

    txid = ltc.miner.pay(address, str(invoice.amount_due))
    _scan_after(ltc)
    invoice.refresh_from_db()
    deposit = Deposit.objects.get(txid=txid)
    assert (invoice.status, deposit.status, deposit.confirmations) == (Invoice.Status.PROCESSING, "seen", 0)

    seen = []
    for _ in range(needed):
        _scan_after(ltc, 1)
        deposit.refresh_from_db()
        seen.append(deposit.confirmations)
    invoice.refresh_from_db()
    assert seen == list(range(1, needed + 1))
    assert deposit.status == "confirmed" and deposit.block_height is not None
    assert invoice.status == Invoice.Status.DONE
    credited = _available(invoice.company)

    # A rescan from an old height changes nothing.
    call_command("chain", "rescan", "--code", "ltc", "--from-height", str(deposit.block_height - 3))
    _scan_after(ltc, 1)
    assert _available(invoice.company) == credited > 0
    assert [e["status"] for e in _events("invoice", str(invoice.pk))].count("done") == 1
    assert Deposit.objects.filter(txid=txid).count() == 1
    assert ledger_verify() == []


def test_a_reorg_that_mines_the_deposit_again_credits_it_once(ltc):
    static = StaticDepositAddressFactory(network="ltc")
    txid = ltc.miner.pay(static.deposit_address.address, "0.5")
    (block,) = ltc.miner.mine(1)
    _scan_after(ltc)
    assert Deposit.objects.get(txid=txid).confirmations == 1

    ltc.node.rpc.call("invalidateblock", block)  # the deposit goes back to the mempool
    _scan_after(ltc, 2)  # and is mined again on the new branch
    deposit = Deposit.objects.get(txid=txid)
    assert deposit.status == "seen" and deposit.block_hash != block

    _scan_after(ltc, get_asset("ltc").confirmations)
    deposit.refresh_from_db()
    assert deposit.status == "confirmed"
    assert _available(static.company) == Decimal("0.5")
    assert [e["status"] for e in _events("deposit", str(deposit.pk))] == ["processing", "done"]


def test_a_double_spend_during_a_reorg_drops_the_deposit_with_its_webhook(ltc):
    static = StaticDepositAddressFactory(network="ltc")
    txid = ltc.miner.pay(static.deposit_address.address, "0.7")
    (block,) = ltc.miner.mine(1)
    _scan_after(ltc)

    ltc.node.rpc.call("invalidateblock", block)
    ltc.miner.double_spend(txid)  # a block whose transaction spends the deposit's input elsewhere
    _scan_after(ltc, 1)

    deposit = Deposit.objects.get(txid=txid)
    assert deposit.status == Deposit.Status.DROPPED
    assert [e["status"] for e in _events("deposit", str(deposit.pk))] == ["processing", "failed"]
    assert _available(static.company) == 0
    assert ledger_verify() == []


def test_a_deposit_beyond_the_first_watched_range_is_seen(ltc):
    DerivationCounter.objects.update_or_create(family="ltc", defaults={"next_index": 1500})
    _scan_after(ltc)  # the scan keeps the node watching ahead of what is handed out
    assert WatchRange.objects.get(code="ltc").watched_until == 1500 + WATCH_AHEAD

    static = StaticDepositAddressFactory(network="ltc")
    assert static.deposit_address.derivation_index == 1500
    txid = ltc.miner.pay(static.deposit_address.address, "0.3")
    _scan_after(ltc)
    assert Deposit.objects.get(txid=txid).deposit_address_id == static.deposit_address_id


def _withdraw(company, addresses: list[str], amount: str = "0.01") -> list[Withdrawal]:
    items = [WithdrawalItem(asset="ltc", amount=Decimal(amount), to=address, tag="") for address in addresses]
    return withdrawal_request(company=company, items=items)


def _fund_payouts(ltc, amount: str) -> None:
    ltc.miner.pay(str(ltc.payouts.call("getnewaddress")), amount)
    ltc.miner.mine(1)


def test_a_withdrawal_is_sent_with_its_txid_in_the_webhook_and_done_at_the_confirmations(ltc):
    _fund_payouts(ltc, "1")
    company = CompanyFactory()
    fund(company, "ltc", "1")
    receiver = ltc.miner.address()
    (withdrawal,) = _withdraw(company, [receiver])

    payouts.payout_monitor("ltc")  # plan, sign, store
    payouts.payout_monitor("ltc")  # broadcast the stored bytes
    withdrawal.refresh_from_db()
    assert withdrawal.txid and ltc.node.rpc.call("getmempoolentry", withdrawal.txid)
    assert [(e["status"], e["txHash"]) for e in _events("withdrawal", withdrawal.uid)] == [
        ("processing", ""),
        ("processing", withdrawal.txid),
    ]
    ltc.miner.mine(get_asset("ltc").confirmations)
    payouts.payout_monitor("ltc")

    withdrawal.refresh_from_db()
    assert withdrawal.status == "done"
    received = ltc.miner.wallet.call("getreceivedbyaddress", receiver, 1)
    assert received == Decimal("0.01")
    chain_tx = ChainTx.objects.get()
    assert chain_tx.fee > 0
    # What the network took is booked to the house account once: the merchant paid the configured fee.
    entry = chain_tx.house_entry
    assert (entry.code, entry.coin, entry.amount) == ("ltc", "ltc", chain_tx.fee)
    payouts.payout_monitor("ltc")
    assert HouseEntry.objects.count() == 1


def test_a_bulk_of_200_is_one_transaction(ltc):
    _fund_payouts(ltc, "5")
    company = CompanyFactory()
    fund(company, "ltc", "10")
    receivers = [ltc.miner.address() for _ in range(200)]
    withdrawals = _withdraw(company, receivers)

    payouts.payout_monitor("ltc")
    payouts.payout_monitor("ltc")

    (chain_tx,) = ChainTx.objects.all()
    decoded = ltc.node.rpc.call("decoderawtransaction", chain_tx.raw)
    paid = {out["scriptPubKey"]["addresses"][0]: out["value"] for out in decoded["vout"]}
    assert all(paid[address] == Decimal("0.01") for address in receivers)
    assert len(decoded["vout"]) in (200, 201)  # and the change
    assert {w.txid for w in Withdrawal.objects.filter(pk__in=[w.pk for w in withdrawals])} == {chain_tx.txid}


def test_a_crash_after_signing_and_one_after_broadcasting_each_pay_exactly_once(ltc):
    _fund_payouts(ltc, "1")
    company = CompanyFactory()
    fund(company, "ltc", "1")
    first, second = ltc.miner.address(), ltc.miner.address()
    _withdraw(company, [first])

    # Killed after the commit that stored the signed bytes, before any broadcast.
    (stored_id,) = payouts.payout_plan("ltc")
    payouts.payout_monitor("ltc")  # the monitor sends the stored bytes
    stored = ChainTx.objects.get(pk=stored_id)
    # A redelivered message sends the same bytes: the node answers with the same txid (it has them).
    assert payouts.payout_broadcast(stored_id) in ("accepted", "already_known")
    ltc.miner.mine(1)
    assert payouts.payout_broadcast(stored_id) == "already_mined"

    # Killed after the node accepted the transaction, before the status was written.
    _withdraw(company, [second])
    (second_id,) = payouts.payout_plan("ltc")
    second_tx = ChainTx.objects.get(pk=second_id)
    backend = get_backend("ltc")
    assert backend.broadcast("ltc", SignedTx(second_tx.txid, second_tx.raw, second_tx.fee)) == "accepted"
    payouts.payout_monitor("ltc")
    ltc.miner.mine(get_asset("ltc").confirmations)
    payouts.payout_monitor("ltc")

    for address in (first, second):
        assert ltc.miner.wallet.call("getreceivedbyaddress", address, 0) == Decimal("0.01")
    assert ChainTx.objects.count() == 2 and stored.txid != second_tx.txid
    assert set(Withdrawal.objects.values_list("status", flat=True)) == {"done"}


def test_an_empty_payout_wallet_holds_withdrawals_until_it_is_funded(ltc):
    company = CompanyFactory()
    fund(company, "ltc", "1")
    (withdrawal,) = _withdraw(company, [ltc.miner.address()])

    payouts.payout_monitor("ltc")
    withdrawal.refresh_from_db()
    assert (withdrawal.status, withdrawal.txid) == ("processing", "")
    assert withdrawal.blocked_reason.startswith("The payout wallet is short")
    assert not ChainTx.objects.exists()

    _fund_payouts(ltc, "1")
    payouts.payout_monitor("ltc")
    payouts.payout_monitor("ltc")
    ltc.miner.mine(get_asset("ltc").confirmations)
    payouts.payout_monitor("ltc")
    withdrawal.refresh_from_db()
    assert (withdrawal.status, withdrawal.blocked_reason) == ("done", "")


def test_a_fee_over_the_cap_holds_the_batch(ltc, settings):
    _fund_payouts(ltc, "1")
    company = CompanyFactory()
    fund(company, "ltc", "1")
    (withdrawal,) = _withdraw(company, [ltc.miner.address()])
    # Regtest has no fee estimate: the fallback is what would be paid, and it is over the cap.
    settings.CHAIN_NODES = {
        "ltc": {**settings.CHAIN_NODES["ltc"], "fee_fallback": "0.01", "fee_cap": "0.001"}
    }

    payouts.payout_monitor("ltc")
    withdrawal.refresh_from_db()
    assert withdrawal.blocked_reason.startswith("Waiting for a lower network fee")

    settings.CHAIN_NODES = {"ltc": {**settings.CHAIN_NODES["ltc"], "fee_fallback": "0.0002"}}
    payouts.payout_monitor("ltc")
    payouts.payout_monitor("ltc")
    withdrawal.refresh_from_db()
    assert withdrawal.txid and withdrawal.blocked_reason == ""


def _stuck_payout(ltc, settings) -> tuple[Withdrawal, str, ChainTx]:
    """One withdrawal, its payout broadcast and unconfirmed, stuck as soon as the monitor looks again."""
    settings.PAYOUT_BUMP_AFTER_SECONDS = 0
    _fund_payouts(ltc, "1")
    company = CompanyFactory()
    fund(company, "ltc", "1")
    receiver = ltc.miner.address()
    (withdrawal,) = _withdraw(company, [receiver])
    payouts.payout_monitor("ltc")  # plan and store
    payouts.payout_monitor("ltc")  # broadcast
    return withdrawal, receiver, ChainTx.objects.get()


def _confirm(ltc, *rows) -> None:
    """Mine the asset's confirmations, let the payout monitor settle, and read `rows` again."""
    ltc.miner.mine(get_asset("ltc").confirmations)
    payouts.payout_monitor("ltc")
    for row in rows:
        row.refresh_from_db()


def test_a_stuck_payout_the_node_cannot_replace_gets_a_child_paying_for_both(ltc, settings):
    """litecoind relays no replacements by default (-mempoolreplacement=0): the bump is a child (CPFP)."""
    withdrawal, receiver, parent = _stuck_payout(ltc, settings)  # at the fallback rate, 0.0002 ltc/kvB
    # The estimate rises fivefold while it waits.
    settings.CHAIN_NODES = {"ltc": {**settings.CHAIN_NODES["ltc"], "fee_fallback": "0.001"}}

    payouts.payout_monitor("ltc")

    child = ChainTx.objects.get(replaces=parent)
    assert child.kind == "child" and child.status == "broadcast"
    entry = ltc.node.rpc.call("getmempoolentry", child.txid)
    assert entry["depends"] == [parent.txid]
    # The package of both pays at least the new rate (fees in ltc, sizes in vB, rate per kvB).
    package_rate = entry["fees"]["ancestor"] * 1000 / entry["ancestorsize"]
    assert package_rate >= Decimal("0.001")
    assert parent.txid in ltc.node.rpc.call("getrawmempool")  # not replaced: still the payout
    withdrawal.refresh_from_db()
    assert withdrawal.txid == parent.txid
    assert [e["txHash"] for e in _events("withdrawal", withdrawal.uid)] == ["", parent.txid]

    payouts.payout_monitor("ltc")  # still unconfirmed: one child is all it gets
    assert ChainTx.objects.count() == 2

    _confirm(ltc, withdrawal, parent, child)
    assert (withdrawal.status, parent.status, child.status) == ("done", "confirmed", "confirmed")
    assert ltc.miner.wallet.call("getreceivedbyaddress", receiver, 1) == Decimal("0.01")


def test_after_a_node_restart_the_wallets_are_loaded_again(ltc, settings):
    _fund_payouts(ltc, "1")
    company = CompanyFactory()
    fund(company, "ltc", "1")
    (withdrawal,) = _withdraw(company, [ltc.miner.address()])
    static = StaticDepositAddressFactory(network="ltc")
    # A restarted node has not loaded them (the payout wallet is the operator's, not marked to load).
    for name in (settings.CHAIN_NODES["ltc"]["deposit_wallet"], settings.CHAIN_NODES["ltc"]["payout_wallet"]):
        ltc.node.rpc.call("unloadwallet", name)

    txid = ltc.miner.pay(static.deposit_address.address, "0.2")
    _scan_after(ltc)
    payouts.payout_monitor("ltc")
    payouts.payout_monitor("ltc")

    assert Deposit.objects.get(txid=txid).status == "seen"
    withdrawal.refresh_from_db()
    assert withdrawal.txid


def test_a_node_that_cannot_be_reached_pauses_ingestion_and_payouts(ltc, settings):
    company = CompanyFactory()
    fund(company, "ltc", "1")
    (withdrawal,) = _withdraw(company, [ltc.miner.address()])
    settings.CHAIN_NODES = {
        "ltc": {**settings.CHAIN_NODES["ltc"], "url": f"http://u:p@127.0.0.1:{free_port()}"}
    }

    assert chain_scan("ltc") == 0
    payouts.payout_monitor("ltc")

    assert ChainCursor.objects.get(code="ltc").paused_reason.endswith("ConnectionError")
    withdrawal.refresh_from_db()
    assert (withdrawal.status, withdrawal.txid) == ("processing", "")
    assert not ChainTx.objects.exists()


def test_the_payout_monitor_stores_what_the_payout_wallet_can_spend(ltc, settings):
    _fund_payouts(ltc, "1.25")
    _fund_payouts(ltc, "0.5")

    payouts.payout_monitor_all()
    stored = PayoutWallet.objects.get(code="ltc")
    settings.CHAIN_NODES = {
        "ltc": {**settings.CHAIN_NODES["ltc"], "url": f"http://u:p@127.0.0.1:{free_port()}"}
    }
    payouts.payout_monitor_all()  # the node is down: the last reading stays

    assert (
        stored.balance == Decimal("1.75") == Decimal(str(ltc.payouts.call("getbalances")["mine"]["trusted"]))
    )
    assert stored.gas_tank is None
    assert PayoutWallet.objects.get(code="ltc").read_at == stored.read_at


def test_a_vpub_deposit_key_is_watched_as_the_node_reads_it(ltc, settings):
    # Wallets export BIP-84 keys as vpub (zpub on mainnet); a node's descriptor takes only tpub (xpub).
    tpub = development_xpub("ltc")
    payload = Base58Decoder.CheckDecode(tpub)
    settings.CHAIN_XPUBS = {"ltc": Base58Encoder.CheckEncode(bytes.fromhex("045f1cf6") + payload[4:])}
    WatchRange.objects.filter(code="ltc").delete()
    settings.CHAIN_NODES = {"ltc": {**settings.CHAIN_NODES["ltc"], "deposit_wallet": "deposits-vpub"}}
    _scan_after(ltc)

    static = StaticDepositAddressFactory(network="ltc")
    txid = ltc.miner.pay(static.deposit_address.address, "0.1")
    _scan_after(ltc)
    assert Deposit.objects.get(txid=txid).deposit_address_id == static.deposit_address_id


def _scrape(client, settings) -> str:
    settings.METRICS_TOKEN = "metrics-token"
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer metrics-token")
    assert response.status_code == 200
    return response.content.decode()


def _reversed_now() -> tuple[int, int]:
    (row,) = chain_status(["ltc"])
    return row.reversed_payouts, row.reversed_deposits


def test_a_reorg_deeper_than_the_confirmations_resends_the_payout_and_alerts_the_deposit(
    ltc, client, settings
):
    _fund_payouts(ltc, "1")  # below the fork: the payout's inputs stay on every branch
    static = StaticDepositAddressFactory(network="ltc")
    company = CompanyFactory()
    fund(company, "ltc", "1")
    (withdrawal,) = _withdraw(company, [ltc.miner.address()])
    deposit_txid = ltc.miner.pay(static.deposit_address.address, "0.4")
    payouts.payout_monitor("ltc")  # plan, sign, store
    payouts.payout_monitor("ltc")  # broadcast
    (fork,) = ltc.miner.mine(1)  # the block holding both
    _scan_after(ltc, get_asset("ltc").confirmations)
    payouts.payout_monitor("ltc")
    withdrawal.refresh_from_db()
    chain_tx = ChainTx.objects.get(txid=withdrawal.txid)
    assert (withdrawal.status, chain_tx.status, chain_tx.block_hash) == ("done", "confirmed", fork)
    assert Deposit.objects.get(txid=deposit_txid).status == "confirmed"
    credited = _available(static.company)  # (the address may have been paid by an earlier test too)
    assert credited >= Decimal("0.4")
    # More than the 10 blocks whose transactions the node puts back in its mempool on a reorganisation.
    _scan_after(ltc, 11)

    depth = ltc.node.rpc.call("getblockcount") - ltc.node.rpc.call("getblock", fork)["height"] + 1
    ltc.node.rpc.call("invalidateblock", fork)
    ltc.miner.mine(depth + 1)  # a longer branch without either transaction
    for txid in (deposit_txid, chain_tx.txid):
        assert ltc.node.rpc.call("getrawmempool").count(txid) == 0
    _scan_after(ltc)  # the scan reports the reorganisation: the settled watch runs at once

    # The payout: alerted, and its stored bytes are in the mempool again (the same transaction).
    assert ltc.node.rpc.call("getrawtransaction", chain_tx.txid) == chain_tx.raw
    assert chain_tx.txid in ltc.node.rpc.call("getrawmempool")
    alert = Alert.objects.get(kind="payout_reversed")
    assert (alert.key, alert.status) == (f"ltc:{chain_tx.txid}", AlertStatus.OPEN)
    withdrawal.refresh_from_db()
    assert withdrawal.status == "done"  # paid, and being paid again with the same bytes
    # The deposit: alerted, still credited, for a person to decide.
    deposit = Deposit.objects.get(txid=deposit_txid)
    assert (deposit.status, deposit.reversed_at is not None) == ("confirmed", True)
    alert = Alert.objects.get(kind="deposit_reversed")
    assert (alert.key, alert.status) == (f"ltc:{deposit_txid}:{deposit.output_index}", AlertStatus.OPEN)
    assert _available(static.company) == credited
    assert ledger_verify() == []
    # Shown where an operator looks: chain status and /metrics.
    assert _reversed_now() == (1, 1)  # the payout counts until it is mined again
    text = _scrape(client, settings)
    assert 'kassa_chain_reversed_payouts{code="ltc"} 1.0' in text
    assert 'kassa_chain_reversed_deposits{code="ltc"} 1.0' in text

    chain_settled_watch_all()  # a later round: told once per reversal, not at every round
    assert Alert.objects.get(kind="deposit_reversed").count == 1
    assert Alert.objects.get(kind="payout_reversed").count == 1

    ltc.miner.mine(1)  # the re-sent payout is mined again
    chain_settled_watch_all()
    chain_tx.refresh_from_db()
    assert chain_tx.reversed_at is None and chain_tx.block_hash != fork
    assert Alert.objects.get(kind="payout_reversed").status == AlertStatus.RESOLVED
    assert _reversed_now() == (0, 1)
    assert 'kassa_chain_reversed_payouts{code="ltc"} 0.0' in _scrape(client, settings)

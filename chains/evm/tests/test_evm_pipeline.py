"""eth and usdterc20 on an in-process EVM chain (eth-tester + py-evm) through the evm backend and the one
ingestion and payout pipeline: deposits seen, confirmed and credited once; a reorg; withdrawals to done;
a crash between sign and send; a payout failing on chain; sweeps with a top-up interrupted and resumed;
the signer refusing what no stored plan asks for."""

from __future__ import annotations

import json
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from web3 import Web3

from chains.base import Outcome, SignedTx
from chains.evm.node import decode_raw, hot_address
from chains.evm.policy import SignRefused
from chains.evm.signer import get_signer
from chains.evm.sweeps import evm_sweep
from chains.models import ChainTx, ChainTxStatus, HouseEntry, NonceSlot, PayoutWallet, Sweep
from chains.status import chain_status
from chains.tasks import chain_settled_watch_all
from invoices.models import Invoice
from payments.ledger import ledger_verify
from payments.models import Deposit, QuarantinedTransfer
from tests.chain import available, fund, webhook_statuses
from tests.evm import EvmChain, eth_tester_chain
from tests.factories import CompanyFactory, InvoiceFactory, UserFactory
from withdrawals import payouts
from withdrawals.models import Withdrawal
from withdrawals.rules import WithdrawalItem
from withdrawals.services import withdrawal_request

RECEIVER = "0x00000000000000000000000000000000000000aa"


@pytest.fixture
def chain(settings, db) -> EvmChain:
    running = eth_tester_chain()
    running.deploy_token()
    settings.CHAIN_BACKENDS = {"eth": "evm", "usdterc20": "evm"}
    settings.CHAIN_NODES = running.nodes()
    running.backend()
    running.scan()  # the cursor starts at the tip
    return running


def _pay_out(code: str) -> None:
    """Plan, sign and store what is due, then send it (the broadcast task's work, run here)."""
    payouts.payout_plan(code)
    payouts.payout_monitor(code, plan=False)


def _withdraw(company, code: str, amount: str, to: str = RECEIVER) -> Withdrawal:
    [withdrawal] = withdrawal_request(
        company=company, items=[WithdrawalItem(asset=code, amount=Decimal(amount), to=to, tag="")]
    )
    return withdrawal


@pytest.mark.parametrize("code", ["eth", "usdterc20"])
def test_a_deposit_is_seen_confirmed_and_credited_once(chain, code):
    invoice = InvoiceFactory(code=code, total="10")
    address = invoice.deposit_address.address
    pay = chain.pay if code == "eth" else chain.pay_token
    txid = pay(address, invoice.amount_due)
    chain.scan()
    deposit = Deposit.objects.get(txid=txid)
    invoice.refresh_from_db()
    assert (deposit.code, deposit.status, deposit.confirmations) == (code, "seen", 1)
    assert deposit.amount == invoice.amount_due
    assert invoice.status == Invoice.Status.PROCESSING

    chain.scan(11)
    deposit.refresh_from_db()
    invoice.refresh_from_db()
    assert (deposit.status, invoice.status) == ("confirmed", Invoice.Status.DONE)
    credited = available(invoice.company, code)
    assert credited > 0

    chain.scan(3)
    assert available(invoice.company, code) == credited
    assert Deposit.objects.filter(txid=txid).count() == 1
    assert webhook_statuses("invoice", str(invoice.pk)).count("done") == 1
    assert ledger_verify() == []


def test_eth_sent_to_a_token_address_is_recorded_never_credited_as_the_token(chain):
    invoice = InvoiceFactory(code="usdterc20", total="10")
    txid = chain.pay(invoice.deposit_address.address, "0.01")
    chain.scan(12)
    deposit = Deposit.objects.get(txid=txid)
    assert (deposit.code, deposit.deposit_address, deposit.company) == ("eth", None, invoice.company)
    assert available(invoice.company, "usdterc20") == 0


def test_a_reorg_drops_an_unconfirmed_deposit_and_never_credits_twice(chain):
    invoice = InvoiceFactory(code="usdterc20", total="10")
    address = invoice.deposit_address.address
    with chain.reorg():
        txid = chain.pay_token(address, invoice.amount_due)
        chain.scan()
        assert Deposit.objects.get(txid=txid).status == "seen"
    chain.mine(3)  # the other branch grows past the old tip: the stored block hashes no longer match
    chain.scan()
    deposit = Deposit.objects.get(txid=txid)
    invoice.refresh_from_db()
    assert deposit.status == "dropped"
    assert invoice.status != Invoice.Status.DONE
    chain.scan(12)
    assert available(invoice.company, "usdterc20") == 0

    # Paid again on the surviving branch (another transaction: the payer's nonce moved on): credited once.
    chain.pay(RECEIVER, "0.001")
    second = chain.pay_token(address, invoice.amount_due)
    chain.scan(12)
    assert Deposit.objects.get(txid=second).status == "confirmed"
    assert available(invoice.company, "usdterc20") > 0
    assert ledger_verify() == []


@pytest.mark.parametrize(("code", "amount"), [("eth", "0.5"), ("usdterc20", "25")])
def test_a_withdrawal_reaches_done_with_its_txid(chain, code, amount):
    chain.fund_hot(eth="10", tokens="1000")
    company = CompanyFactory()
    fund(company, code, "100")
    withdrawal = _withdraw(company, code, amount)

    _pay_out(code)
    withdrawal.refresh_from_db()
    assert withdrawal.txid.startswith("0x") and withdrawal.status == "processing"
    chain.scan()
    payouts.payout_monitor(code)
    chain.mine(12)
    payouts.payout_monitor(code)
    withdrawal.refresh_from_db()
    assert withdrawal.status == "done"
    received = chain.balance(RECEIVER) if code == "eth" else chain.token_balance(RECEIVER)
    assert received == Decimal(amount)
    chain_tx = ChainTx.objects.get(txid=withdrawal.txid)
    assert (chain_tx.status, chain_tx.sender.lower(), chain_tx.nonce) == (
        "confirmed",
        hot_address().lower(),
        0,
    )
    assert chain_tx.fee_paid is not None and 0 < chain_tx.fee_paid <= chain_tx.fee
    assert webhook_statuses("withdrawal", withdrawal.uid)[-1] == "done"
    # The gas is the house's, in ether whatever the code; the merchant was charged the configured fee.
    entry = chain_tx.house_entry
    assert (entry.code, entry.coin, entry.amount) == (code, "eth", chain_tx.fee_paid)
    out = StringIO()
    call_command("chain", "fees", "--code", code, "--json", stdout=out)
    fees = json.loads(out.getvalue())
    assert (fees["withdrawalsDone"], Decimal(fees["charged"]), fees["coin"]) == (1, withdrawal.fee, "eth")
    assert Decimal(fees["paidPayouts"]) == chain_tx.fee_paid and fees["paidSweeps"] == "0"


def test_a_crash_between_sign_and_send_then_a_resend_pays_once(chain, monkeypatch):
    chain.fund_hot()
    company = CompanyFactory()
    fund(company, "eth", "10")
    withdrawal = _withdraw(company, "eth", "1")
    # The worker dies after the commit that stored the signed bytes, before the broadcast.
    payouts.payout_plan("eth")
    stored = ChainTx.objects.get()
    assert stored.status == ChainTxStatus.SIGNED and chain.balance(RECEIVER) == 0

    payouts.payout_monitor("eth", plan=False)  # the monitor re-sends the stored bytes
    payouts.payout_monitor("eth", plan=False)
    # A re-send of the mined transaction: "nonce too low" with our hash on chain is success, not a new tx.
    signed = SignedTx(txid=stored.txid, raw=stored.raw, fee=stored.fee)
    assert chain.backend().broadcast("eth", signed) == Outcome.ALREADY_MINED
    chain.mine(12)
    payouts.payout_monitor("eth")
    withdrawal.refresh_from_db()
    assert withdrawal.status == "done" and withdrawal.txid == stored.txid
    assert chain.balance(RECEIVER) == Decimal(1)
    assert ChainTx.objects.count() == 1
    assert NonceSlot.objects.get(address=hot_address().lower()).next_nonce == 1


def test_a_payout_that_fails_on_chain_is_rejected_and_the_hold_released(chain):
    chain.fund_hot(eth="10", tokens="1000")
    company = CompanyFactory()
    fund(company, "usdterc20", "100")
    withdrawal = _withdraw(company, "usdterc20", "30")
    assert available(company, "usdterc20") < 70
    payouts.payout_plan("usdterc20")  # planned and signed while the receiver is still allowed
    stored = ChainTx.objects.get()
    # The token blocks the receiver before the transaction is mined: it is mined with status 0.
    chain.token.functions.block(Web3.to_checksum_address(RECEIVER), True).transact({"from": chain.payer})
    payouts.payout_monitor("usdterc20", plan=False)
    chain.mine(12)
    payouts.payout_monitor("usdterc20", plan=False)
    withdrawal.refresh_from_db()
    stored.refresh_from_db()
    assert stored.status == ChainTxStatus.FAILED and stored.fee_paid > 0
    assert stored.house_entry.amount == stored.fee_paid  # a failed transaction still paid its gas
    assert withdrawal.status == "rejected"
    assert available(company, "usdterc20") == Decimal(100)
    assert chain.token_balance(RECEIVER) == 0
    assert ledger_verify() == []


def test_a_short_hot_wallet_holds_the_payout_until_it_is_funded(chain):
    company = CompanyFactory()
    fund(company, "usdterc20", "100")
    withdrawal = _withdraw(company, "usdterc20", "30")
    chain.fund_hot(eth="1")
    payouts.payout_plan("usdterc20")
    withdrawal.refresh_from_db()
    assert withdrawal.status == "processing" and "short" in withdrawal.blocked_reason
    chain.pay_token(hot_address(), "50")
    _pay_out("usdterc20")
    withdrawal.refresh_from_db()
    assert withdrawal.txid and withdrawal.blocked_reason == ""


def test_a_fee_over_the_cap_holds_the_payout(chain, settings):
    settings.CHAIN_NODES = chain.nodes(fee_cap_gwei="1")  # base fee 1 gwei: 2 x base + tip is over it
    chain.fund_hot()
    company = CompanyFactory()
    fund(company, "eth", "10")
    withdrawal = _withdraw(company, "eth", "1")
    payouts.payout_plan("eth")
    withdrawal.refresh_from_db()
    assert withdrawal.txid == "" and "fee" in withdrawal.blocked_reason
    assert not ChainTx.objects.exists()


def test_a_token_sweep_with_a_top_up_survives_a_crash_and_resumes(chain, monkeypatch):
    chain.fund_hot(eth="10")
    invoice = InvoiceFactory(code="usdterc20", total="100")
    address = invoice.deposit_address.address
    chain.pay_token(address, invoice.amount_due)
    chain.scan(12)
    assert Deposit.objects.get(address=address).status == "confirmed"
    assert chain.balance(address) == 0

    backend = chain.backend()
    sent = []
    real_broadcast = backend.broadcast
    monkeypatch.setattr(backend, "broadcast", lambda code, tx: sent.append(tx.txid) or Outcome.UNAVAILABLE)
    evm_sweep("usdterc20")  # opened, TOPUP
    evm_sweep("usdterc20")  # top-up signed and stored, then the "crash": never reached the node
    sweep = Sweep.objects.get()
    assert sweep.status == Sweep.Status.TOPUP and sweep.topup_tx is not None
    assert sweep.topup_tx.status == ChainTxStatus.SIGNED and chain.balance(address) == 0
    topup_txid = sweep.topup_tx.txid

    monkeypatch.setattr(backend, "broadcast", real_broadcast)
    evm_sweep("usdterc20")  # the stored top-up is sent (the same bytes), and mined
    evm_sweep("usdterc20")  # mined: READY
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.READY and sweep.topup_tx.txid == topup_txid
    assert ChainTx.objects.filter(kind=ChainTx.Kind.TOPUP).count() == 1
    evm_sweep("usdterc20")  # the sweep is built only now, signed, stored, sent
    evm_sweep("usdterc20")  # mined: DONE
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.DONE
    assert chain.token_balance(hot_address()) == invoice.amount_due
    assert chain.token_balance(address) == 0
    booked = HouseEntry.objects.filter(code="usdterc20").order_by("pk")
    assert [(e.chain_tx.kind, e.amount) for e in booked] == [
        ("topup", sweep.topup_tx.fee_paid),
        ("sweep", sweep.sweep_tx.fee_paid),
    ]
    evm_sweep("usdterc20")
    assert Sweep.objects.count() == 1  # nothing left to sweep


def test_a_sweep_from_a_blocked_address_fails_with_an_alert(chain):
    from alerts.models import Alert

    chain.fund_hot(eth="10")
    invoice = InvoiceFactory(code="usdterc20", total="100")
    address = invoice.deposit_address.address
    chain.pay_token(address, invoice.amount_due)
    chain.scan(12)
    evm_sweep("usdterc20")
    evm_sweep("usdterc20")
    evm_sweep("usdterc20")
    assert Sweep.objects.get().status == Sweep.Status.READY  # topped up
    chain.token.functions.block(Web3.to_checksum_address(address), True).transact({"from": chain.payer})
    evm_sweep("usdterc20")  # sent with the planned gas: mined with status 0
    evm_sweep("usdterc20")
    sweep = Sweep.objects.get()
    assert sweep.status == Sweep.Status.FAILED and "status 0" in sweep.last_error
    assert Alert.objects.filter(kind="sweep_failed").count() == 1
    assert chain.token_balance(address) == invoice.amount_due  # still there, for a person
    evm_sweep("usdterc20")
    assert Sweep.objects.count() == 1  # never swept again on its own


def test_an_eth_sweep_moves_the_balance_less_its_gas(chain):
    invoice = InvoiceFactory(code="eth", total="10")
    address = invoice.deposit_address.address
    chain.pay(address, invoice.amount_due)
    chain.scan(12)
    evm_sweep("eth")
    evm_sweep("eth")
    evm_sweep("eth")
    sweep = Sweep.objects.get()
    assert sweep.status == Sweep.Status.DONE
    assert chain.balance(hot_address()) == sweep.amount
    assert chain.balance(address) < Decimal("0.0001")


def test_the_signer_refuses_what_no_stored_plan_asks_for(chain):
    chain.fund_hot()
    company = CompanyFactory()
    fund(company, "eth", "10")
    withdrawal = _withdraw(company, "eth", "1")
    backend = chain.backend()
    from chains.base import FeeQuote, Payment

    fee = FeeQuote(rate=Decimal(3), unit="gwei", source="test", priority=Decimal(1))
    honest = backend.build("eth", [Payment(withdrawal.reference, RECEIVER, "", Decimal(1))], fee)
    signer = get_signer()
    assert signer.sign(honest).txid.startswith("0x")

    def forged(**changes):
        payload = json.loads(honest.payload)
        payload.update({k: v for k, v in changes.items() if k in ("purpose", "ref", "index")})
        payload["tx"].update({k: v for k, v in changes.items() if k not in ("purpose", "ref", "index")})
        return honest.__class__(code="eth", payload=json.dumps(payload), payments=(), fee=honest.fee)

    attacker = "0x00000000000000000000000000000000000000bb"
    for attempt in (
        forged(to=Web3.to_checksum_address(attacker)),  # another destination
        forged(value=2 * 10**18),  # more than the withdrawal
        forged(ref="withdrawal:999-999"),  # no such withdrawal
        forged(purpose="sweep", ref="sweep:1"),  # no such sweep
        forged(purpose="drain"),
        forged(chainId=1),  # another chain
        forged(maxFeePerGas=10**15),  # over the fee cap
    ):
        with pytest.raises(SignRefused):
            signer.sign(attempt)
    withdrawal_reject_then_sign = forged()
    Withdrawal.objects.filter(pk=withdrawal.pk).update(status="rejected")
    with pytest.raises(SignRefused):
        signer.sign(withdrawal_reject_then_sign)


def test_a_stuck_payout_is_replaced_with_the_same_nonce(chain, settings):
    settings.PAYOUT_BUMP_AFTER_SECONDS = 0
    chain.fund_hot()
    company = CompanyFactory()
    fund(company, "eth", "10")
    _withdraw(company, "eth", "1")
    backend = chain.backend()
    payouts.payout_plan("eth")
    original = ChainTx.objects.get()
    bumped = backend.bump("eth", original.txid, backend.quote_fee("eth"))
    assert bumped is not None
    old, new = decode_raw(original.raw), decode_raw(bumped.raw)
    assert new["nonce"] == old["nonce"] and new["maxFeePerGas"] >= old["maxFeePerGas"] * 1.125
    assert (new["to"], new["value"]) == (old["to"], old["value"])
    assert bumped.txid != original.txid and bumped.nonce == original.nonce


def test_a_reorg_that_removes_a_credited_deposit_alerts_a_person_and_never_debits(chain):
    from alerts.models import Alert

    invoice = InvoiceFactory(code="eth", total="10")
    with chain.reorg():
        txid = chain.pay(invoice.deposit_address.address, invoice.amount_due)
        chain.scan(12)
        assert Deposit.objects.get(txid=txid).status == "confirmed"
        credited = available(invoice.company, "eth")
        assert credited > 0
    chain.mine(15)
    chain.scan()
    chain.scan()
    assert Deposit.objects.get(txid=txid).status == "confirmed"  # never undone by itself
    assert available(invoice.company, "eth") == credited
    assert Alert.objects.filter(kind="deposit_reversed").count() == 1
    assert ledger_verify() == []


def test_chain_status_shows_the_hot_wallet_and_gas_tank_and_a_down_node_pauses(chain, settings, client):
    from io import StringIO

    from django.core.management import call_command

    from chains.models import ChainCursor
    from chains.scanning import chain_scan

    chain.fund_hot(eth="2", tokens="30")
    out = StringIO()
    call_command("chain", "status", "--code", "usdterc20", "--json", stdout=out)
    row = json.loads(out.getvalue())
    assert (row["backend"], row["payoutWallet"], row["gasTank"], row["gasPaid"]) == ("evm", "30", "2", "0")
    assert row["hotAddress"] == hot_address()
    staff = UserFactory(is_staff=True)
    client.force_login(staff)
    page = client.get("/dashboard/status/").content.decode()
    assert f"Hot address of eth, usdterc20: <code>{hot_address()}</code>" in page
    assert ">30<" in page and ">2<" in page  # the hot wallet's USDT, and its ether (the gas tank)
    # The cursor it shares with eth: two blocks behind (the two funding transactions came after the scan).
    assert (row["cursor"], row["lag"]) == (row["nodeTip"] - 2, 2)

    nodes = chain.nodes()
    for entry in nodes.values():
        entry["url"] = "http://127.0.0.1:9"  # nothing listens there
    settings.CHAIN_NODES = nodes
    assert chain_scan("eth") == 0
    assert ChainCursor.objects.get(code="eth").paused_reason
    out = StringIO()
    call_command("chain", "status", "--code", "eth", stdout=out)
    assert "node DOWN" in out.getvalue() and "PAUSED" in out.getvalue()
    assert chain_scan("usdterc20") == 0  # scanned with eth: nothing of its own


def test_the_payout_monitor_stores_the_hot_wallet_and_its_gas_tank(chain):
    chain.fund_hot(eth="2", tokens="30")

    payouts.payout_monitor_all()

    wallets = {row.code: (row.balance, row.gas_tank) for row in PayoutWallet.objects.all()}
    assert wallets["eth"] == (Decimal("2"), Decimal("2"))
    assert wallets["usdterc20"] == (Decimal("30"), Decimal("2"))


def test_past_the_recipient_chunk_token_logs_are_read_contract_wide_and_matched_here(chain, monkeypatch):
    from chains.evm import scanner

    monkeypatch.setattr(scanner, "LOG_ADDRESS_CHUNK", 1)  # 2 watched addresses: contract-wide
    first, second = InvoiceFactory(code="usdterc20", total="5"), InvoiceFactory(code="usdterc20", total="7")
    paid = [chain.pay_token(inv.deposit_address.address, inv.amount_due) for inv in (first, second)]
    stranger = chain.pay_token(RECEIVER, "3")  # someone else's transfer of the same token
    chain.scan(12)
    assert sorted(Deposit.objects.values_list("txid", flat=True)) == sorted(paid)
    assert not Deposit.objects.filter(txid=stranger).exists()
    for invoice in (first, second):
        invoice.refresh_from_db()
        assert invoice.status == Invoice.Status.DONE


def test_a_reorg_to_a_shorter_chain_waits_for_it_to_grow(chain):
    invoice = InvoiceFactory(code="eth", total="10")
    with chain.reorg():
        txid = chain.pay(invoice.deposit_address.address, invoice.amount_due)
        chain.mine(2)
        chain.scan()
    chain.scan()  # the stored heights above the fork no longer exist: rescanned from the fork, no error
    assert Deposit.objects.get(txid=txid).status == "dropped"
    chain.scan(5)
    assert Deposit.objects.get(txid=txid).status == "dropped"


def test_a_node_refusing_a_large_log_range_gets_it_halved(chain):
    invoice = InvoiceFactory(code="usdterc20", total="10")
    txid = chain.pay_token(invoice.deposit_address.address, invoice.amount_due)
    chain.mine(20)
    real = chain.w3.eth.get_logs
    refused, answered = [], []

    def limited(query):
        span = (query["fromBlock"], query["toBlock"])
        if span[1] - span[0] > 3:
            refused.append(span)
            raise ValueError({"code": -32005, "message": "query returned more than 10000 results"})
        answered.append(span)
        return real(query)

    chain.w3.eth.get_logs = limited  # type: ignore[method-assign]
    try:
        chain.scan()
    finally:
        chain.w3.eth.get_logs = real  # type: ignore[method-assign]
    assert Deposit.objects.get(txid=txid).status == "confirmed"
    assert refused and answered  # asked whole first, then in halves
    covered = sorted(height for low, high in answered for height in range(low, high + 1))
    assert covered == list(range(refused[0][0], refused[0][1] + 1))  # every block once, none skipped


def test_a_payout_over_the_signers_limit_waits_with_the_signers_reason(chain, settings):
    settings.CHAIN_NODES = chain.nodes(payout_limit="2")
    chain.fund_hot()
    company = CompanyFactory()
    fund(company, "eth", "10")
    big, small = _withdraw(company, "eth", "3"), _withdraw(company, "eth", "1")
    _pay_out("eth")
    _pay_out("eth")  # asked again: still refused, the others go on
    big.refresh_from_db()
    small.refresh_from_db()
    assert big.status == "processing" and big.txid == ""
    assert big.blocked_reason == "The EVM signer refuses this payout: 3 eth is over the payout limit 2"
    assert small.txid and small.blocked_reason == ""


def test_the_pay_page_uri_names_the_configured_chain_and_token(chain):
    from invoices.payuri import payment_uri

    to = "0x9858EfFD232B4033E47d90003D41EC34EcaEda94"
    token_uri = payment_uri("usdterc20", address=to, amount=Decimal("4.545"))
    assert (
        token_uri == f"ethereum:{chain.token.address}@{chain.chain_id}/transfer?address={to}&uint256=4545000"
    )
    assert (
        payment_uri("eth", address=to, amount=Decimal("0.5"))
        == f"ethereum:{to}@{chain.chain_id}?value={5 * 10**17}"
    )


def test_zero_value_token_transfers_are_not_deposits(chain):
    invoice = InvoiceFactory(code="usdterc20", total="10")
    spam = chain.pay_token(invoice.deposit_address.address, "0")  # address-poisoning spam moves nothing
    paid = chain.pay_token(invoice.deposit_address.address, invoice.amount_due)
    chain.scan(12)
    assert list(Deposit.objects.values_list("txid", flat=True)) == [paid]
    assert not QuarantinedTransfer.objects.filter(txid=spam).exists()  # not even held as a bad transfer


def test_a_reorg_that_takes_back_a_settled_payout_resends_its_bytes_and_alerts_once(chain):
    from alerts.models import Alert, AlertStatus

    chain.fund_hot()
    company = CompanyFactory()
    fund(company, "eth", "10")
    invoice = InvoiceFactory(code="eth", total="10")
    with chain.reorg():  # everything in here is taken back: deeper than the 12 confirmations
        withdrawal = _withdraw(company, "eth", "0.5")
        _pay_out("eth")
        deposit_txid = chain.pay(invoice.deposit_address.address, invoice.amount_due)
        chain.scan(12)
        payouts.payout_monitor("eth")
        withdrawal.refresh_from_db()
        assert withdrawal.status == "done"
        chain_tx = ChainTx.objects.get(txid=withdrawal.txid)
        assert chain_tx.block_hash
        credited = available(invoice.company, "eth")
    chain.mine(15)
    assert chain.balance(RECEIVER) == 0  # the payout is gone with the branch

    chain.scan()  # finds the reorganisation: the settled watch runs at once

    payout_alert = Alert.objects.get(kind="payout_reversed")
    assert (payout_alert.key, payout_alert.status) == (f"eth:{chain_tx.txid}", AlertStatus.OPEN)
    assert chain.balance(RECEIVER) == Decimal("0.5")  # the stored bytes again (eth-tester mines at once)
    assert chain.w3.eth.get_transaction_receipt(chain_tx.txid)["status"] == 1
    assert Alert.objects.get(kind="deposit_reversed").status == AlertStatus.OPEN
    assert Deposit.objects.get(txid=deposit_txid).status == "confirmed"
    assert available(invoice.company, "eth") == credited
    assert [(row.reversed_payouts, row.reversed_deposits) for row in chain_status(["eth"])] == [(1, 1)]

    chain_settled_watch_all()  # the next round finds the payout mined again, the deposit still gone

    chain_tx.refresh_from_db()
    assert chain_tx.reversed_at is None
    assert Alert.objects.get(kind="payout_reversed").status == AlertStatus.RESOLVED
    assert Alert.objects.get(kind="deposit_reversed").count == 1  # told once per reversal
    assert [(row.reversed_payouts, row.reversed_deposits) for row in chain_status(["eth"])] == [(0, 1)]
    assert ledger_verify() == []

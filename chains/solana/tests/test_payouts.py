"""sol withdrawals on the Solana devnet through the solana backend, its signer and the one payout pipeline:
paid once to the recipient, done only once finalized, the fee the chain charged booked to the house
account; a worker killed between store and send pays once; a stored transaction whose blockhash expired
unlanded is rebuilt once and only once, one that landed never; one that failed on chain pays nothing and
its fee is booked; a short hot wallet and a priority fee over the cap wait with the reason, a recipient
the transfer could not create is refused before signing; an unrouted payment refunded reaches its sender
once."""

from __future__ import annotations

from decimal import Decimal

import pytest
from bip_utils import Bip39SeedGenerator
from solders.hash import Hash
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.transaction import Transaction, VersionedTransaction

from chains.backend import get_backend
from chains.base import Outcome, Payment, SignedTx
from chains.derivation import DEVELOPMENT_MNEMONIC
from chains.models import ChainTx, ChainTxStatus, HouseEntry, UnroutedDeposit
from chains.solana import keys
from chains.solana.payouts import (
    PRIORITY_PERCENTILE,
    RENT_EXEMPT_MINIMUM,
    RecipientBelowRent,
    percentile,
    stored_transaction,
)
from chains.solana.policy import payout_message
from chains.solana.signer import (
    MAX_PROCESSING_AGE,
    SIGNER_MARGIN_BLOCKS,
    NodeView,
    SolanaJournal,
    get_signer,
    stored,
)
from chains.solana.units import from_lamports
from chains.unrouted import unrouted_refund
from payments.ledger import ledger_verify
from payments.models import Deposit
from tests.chain import SolanaChain, available, fund
from tests.factories import CompanyFactory
from withdrawals import payouts
from withdrawals.models import Withdrawal
from withdrawals.rules import WithdrawalItem
from withdrawals.services import withdrawal_request

FINAL = SolanaChain.FINAL_SLOTS
SOL = 10**9
# Slots after which a blockhash taken now is past its last valid height at `finalized`, by the margin the
# backend waits before it rebuilds.
EXPIRES = MAX_PROCESSING_AGE + SIGNER_MARGIN_BLOCKS + FINAL + 1
RECIPIENT = Keypair.from_seed(bytes([42] * 32)).pubkey()


@pytest.fixture
def chain(settings, db, solana_devnet, monkeypatch) -> SolanaChain:
    running = SolanaChain(solana_devnet)
    running.hot = keys.development_address()  # the in-process signer's key: the public development seed
    settings.CHAIN_BACKENDS = {"sol": "solana"}
    settings.CHAIN_NODES = running.nodes()
    settings.CHAIN_XPUBS = {}
    # The in-process signer lives as long as the process; each test has its own devnet and database.
    monkeypatch.setattr(get_signer(), "journal", SolanaJournal())
    monkeypatch.setattr(get_signer(), "chain", NodeView())
    running.scan()  # the cursor starts at the finalized slot
    return running


def _hot_keypair() -> Keypair:
    seed = Bip39SeedGenerator(DEVELOPMENT_MNEMONIC).Generate()
    return Keypair.from_seed_and_derivation_path(seed, keys.DEVELOPMENT_PATH)


def _funded_hot(chain: SolanaChain, sol: int = 100) -> None:
    chain.devnet.airdrop(chain.hot, sol * SOL)
    chain.mine()


def _withdraw(company, amount: str, to: Pubkey | str = RECIPIENT) -> Withdrawal:
    [withdrawal] = withdrawal_request(
        company=company, items=[WithdrawalItem(asset="sol", amount=Decimal(amount), to=str(to), tag="")]
    )
    return withdrawal


def _company(amount: str = "100"):
    company = CompanyFactory()
    fund(company, "sol", amount)
    return company


def _balance(chain: SolanaChain, address: Pubkey | str) -> int:
    return int(chain.devnet.balance(address, "confirmed"))


def _fee(chain: SolanaChain, txid: str) -> Decimal:
    return from_lamports(int(chain.devnet.transaction(txid, "finalized")["meta"]["fee"]))


def test_a_withdrawal_arrives_once_and_is_done_only_once_finalized_with_the_fee_booked(chain):
    _funded_hot(chain)
    company = _company()
    withdrawal = _withdraw(company, "1.25")
    before = _balance(chain, RECIPIENT)

    payouts.payout_plan("sol")
    payouts.payout_monitor("sol", plan=False)  # the broadcast task's work: the stored bytes sent
    chain.mine(FINAL - 1)  # confirmed, one slot short of finalized
    payouts.payout_monitor("sol")

    withdrawal.refresh_from_db()
    chain_tx = ChainTx.objects.get(withdrawal_links__withdrawal=withdrawal)
    assert (withdrawal.status, withdrawal.txid) == (Withdrawal.Status.PROCESSING, chain_tx.txid)

    chain.mine()
    payouts.payout_monitor("sol")
    payouts.payout_monitor("sol")

    withdrawal.refresh_from_db()
    chain_tx.refresh_from_db()
    assert withdrawal.status == Withdrawal.Status.DONE and chain_tx.status == ChainTxStatus.CONFIRMED
    assert _balance(chain, RECIPIENT) - before == 1_250_000_000
    paid = _fee(chain, chain_tx.txid)
    assert paid >= from_lamports(5_000) and chain_tx.fee_paid == paid
    assert chain_tx.fee_rate == "0 microlamports/CU (p75)"  # no recent priority fees on this devnet
    assert list(HouseEntry.objects.filter(chain_tx=chain_tx).values_list("amount", flat=True)) == [paid]
    assert available(company, "sol") == Decimal(100) - Decimal("1.25") - withdrawal.fee
    assert ledger_verify() == []


def test_a_worker_killed_between_store_and_send_pays_once(chain):
    _funded_hot(chain)
    withdrawal = _withdraw(_company(), "2")
    before = _balance(chain, RECIPIENT)
    payouts.payout_plan("sol")  # stored; the worker that would send it is lost
    stored = ChainTx.objects.get(withdrawal_links__withdrawal=withdrawal)
    assert stored.status == ChainTxStatus.SIGNED

    payouts.payout_monitor("sol")  # finds it unsent, and sends the stored bytes
    chain.mine()
    signed = SignedTx(txid=stored.txid, raw=stored.raw, fee=stored.fee)
    assert get_backend("sol").broadcast("sol", signed) == Outcome.ALREADY_MINED  # a second send
    assert payouts.payout_broadcast(stored.pk) == Outcome.ALREADY_MINED
    chain.mine(FINAL)
    payouts.payout_monitor("sol")
    payouts.payout_monitor("sol")

    stored.refresh_from_db()
    withdrawal.refresh_from_db()
    assert stored.status == ChainTxStatus.CONFIRMED and withdrawal.status == Withdrawal.Status.DONE
    assert _balance(chain, RECIPIENT) - before == 2 * SOL
    assert ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal).count() == 1


def test_an_expired_blockhash_is_rebuilt_once_and_only_once(chain):
    _funded_hot(chain)
    withdrawal = _withdraw(_company(), "3")
    before = _balance(chain, RECIPIENT)
    payouts.payout_plan("sol")  # stored; never sent, it never lands
    expired = ChainTx.objects.get(withdrawal_links__withdrawal=withdrawal)
    chain.mine(MAX_PROCESSING_AGE)
    payouts.payout_monitor("sol", plan=False)  # its blockhash may still be valid at finalized: re-sent only
    assert ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal).count() == 1
    chain.mine(EXPIRES - MAX_PROCESSING_AGE)
    signed = SignedTx(txid=expired.txid, raw=expired.raw, fee=expired.fee)
    assert get_backend("sol").broadcast("sol", signed) == Outcome.EXPIRED  # "Blockhash not found"

    payouts.payout_monitor("sol")  # closes it, and plans its withdrawal anew
    payouts.payout_monitor("sol", plan=False)  # the broadcast task's work
    payouts.payout_monitor("sol")
    chain.mine(FINAL)
    payouts.payout_monitor("sol")
    chain.mine(EXPIRES)
    payouts.payout_monitor("sol")  # long past the rebuilt one's blockhash too: it landed, never rebuilt

    txs = list(ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal).order_by("pk"))
    assert [tx.status for tx in txs] == [ChainTxStatus.FAILED, ChainTxStatus.CONFIRMED]
    assert txs[0].pk == expired.pk and txs[0].last_error.startswith("expired unmined")
    withdrawal.refresh_from_db()
    assert (withdrawal.status, withdrawal.txid) == (Withdrawal.Status.DONE, txs[1].txid)
    assert _balance(chain, RECIPIENT) - before == 3 * SOL
    assert chain.devnet.status(expired.txid) is None


def test_a_landed_payout_past_its_blockhash_is_never_rebuilt(chain):
    _funded_hot(chain)
    withdrawal = _withdraw(_company(), "1")
    before = _balance(chain, RECIPIENT)
    payouts.payout_plan("sol")
    payouts.payout_monitor("sol", plan=False)  # sent; lands in the next slot
    chain.mine(EXPIRES)  # then far past its last valid height, before the monitor looks again

    payouts.payout_monitor("sol")
    payouts.payout_monitor("sol")

    [chain_tx] = ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal)
    withdrawal.refresh_from_db()
    assert chain_tx.status == ChainTxStatus.CONFIRMED and withdrawal.status == Withdrawal.Status.DONE
    assert _balance(chain, RECIPIENT) - before == SOL


def test_a_payout_failed_on_chain_pays_nothing_is_rejected_once_finalized_and_its_fee_booked(chain):
    _funded_hot(chain, sol=2)
    company = _company()
    withdrawal = _withdraw(company, "1.5")
    payouts.payout_plan("sol")  # signed and stored; then the hot wallet spends most of what it held
    hot = _hot_keypair()
    chain.devnet.payment(Pubkey.from_string(str(RECIPIENT)), 2 * SOL - 1_000_000 - 5_000, payer=hot)
    chain.mine()
    stored = ChainTx.objects.get(withdrawal_links__withdrawal=withdrawal)
    wire, _ = stored_transaction(stored.raw)
    # An earlier send the worker never heard back from: a leader took it without preflight.
    chain.devnet.send(VersionedTransaction.from_bytes(wire), skipPreflight=True)
    before = _balance(chain, RECIPIENT)
    chain.mine()

    payouts.payout_monitor("sol", plan=False)  # the node has it: counted as sent
    chain.mine(FINAL - 2)  # its slot one short of finalized
    payouts.payout_monitor("sol", plan=False)
    withdrawal.refresh_from_db()
    assert withdrawal.status == Withdrawal.Status.PROCESSING, (
        withdrawal.reject_reason
    )  # failed, not final yet
    chain.mine()
    payouts.payout_monitor("sol", plan=False)

    withdrawal.refresh_from_db()
    stored.refresh_from_db()
    assert (withdrawal.status, stored.status) == (Withdrawal.Status.REJECTED, ChainTxStatus.FAILED)
    assert withdrawal.reject_reason == "The transaction failed (InstructionError) on chain."
    assert _balance(chain, RECIPIENT) == before
    paid = _fee(chain, stored.txid)
    assert HouseEntry.objects.get(chain_tx=stored).amount == paid > 0
    assert available(company, "sol") == Decimal(100)
    assert ledger_verify() == []


def test_a_short_hot_wallet_holds_the_payout_with_the_reason(chain):
    _funded_hot(chain, sol=1)
    withdrawal = _withdraw(_company(), "1")

    payouts.payout_plan("sol")

    withdrawal.refresh_from_db()
    assert withdrawal.status == Withdrawal.Status.PROCESSING
    assert withdrawal.blocked_reason.startswith(f"The payout wallet is short: {chain.hot} holds 1 SOL")
    assert "rent-exempt" in withdrawal.blocked_reason
    assert not ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal).exists()


def test_a_priority_fee_over_the_cap_holds_the_payout_with_the_reason(chain, settings):
    settings.CHAIN_NODES = {"sol": {**chain.nodes()["sol"], "priority_fee_cap": "0.000001"}}
    _funded_hot(chain)
    # In most recent slots, the transactions writing the hot address paid 2,000,000 micro-lamports a unit.
    for _ in range(4):
        chain.devnet.pay(chain.hot, SOL, compute_unit_price=2_000_000, compute_unit_limit=1_000)
        chain.mine()
    withdrawal = _withdraw(_company(), "1")

    payouts.payout_plan("sol")

    withdrawal.refresh_from_db()
    assert withdrawal.status == Withdrawal.Status.PROCESSING
    assert "over the configured priority_fee_cap 0.000001 SOL" in withdrawal.blocked_reason
    assert not ChainTx.objects.filter(withdrawal_links__withdrawal=withdrawal).exists()


@pytest.mark.parametrize(
    ("prices", "quoted"),
    [([], 0), ([0, 0, 0, 9], 0), ([0, 5, 5, 9], 5), ([9, 1, 5, 7], 7), ([3], 3)],
)
def test_the_quoted_price_is_the_75th_percentile_of_recent_prices_nearest_rank(prices, quoted):
    assert percentile(prices, PRIORITY_PERCENTILE) == quoted


def test_twin_withdrawals_on_one_blockhash_are_two_transactions_each_paid_once(chain):
    _funded_hot(chain)
    company = _company()
    first, second = _withdraw(company, "1"), _withdraw(company, "1")
    before = _balance(chain, RECIPIENT)

    payouts.payout_plan("sol")
    payouts.payout_monitor("sol", plan=False)
    chain.mine(FINAL)
    payouts.payout_monitor("sol")

    txids = {w.txid for w in Withdrawal.objects.filter(pk__in=[first.pk, second.pk])}
    assert len(txids) == 2 and all(txids)
    assert _balance(chain, RECIPIENT) - before == 2 * SOL


def test_a_payout_a_new_account_could_not_hold_is_refused_before_signing(chain):
    # Below sol's minimal withdrawal, so no request reaches this; the backend refuses it all the same.
    _funded_hot(chain)
    backend = get_backend("sol")
    empty = Keypair.from_seed(bytes([5] * 32)).pubkey()  # an address that holds nothing
    small = Payment(key="withdrawal:x", to=str(empty), tag="", amount=from_lamports(RENT_EXEMPT_MINIMUM - 1))
    funded = Payment(key="withdrawal:y", to=str(RECIPIENT), tag="", amount=small.amount)
    chain.devnet.airdrop(RECIPIENT, SOL)
    chain.mine()

    with pytest.raises(RecipientBelowRent, match=f"{empty} holds no SOL"):
        backend.build("sol", [small], backend.quote_fee("sol"))
    assert backend.build("sol", [funded], backend.quote_fee("sol")).fee > 0


def test_an_unrouted_payment_refunded_reaches_its_sender_once(chain):
    _funded_hot(chain)
    customer = chain.devnet.customer.pubkey()
    txid = chain.pay("0.5")  # no reference: nobody's
    chain.scan(FINAL)
    deposit = Deposit.objects.get(txid=txid)
    assert deposit.from_address == str(customer)
    unrouted = UnroutedDeposit.objects.get(deposit=deposit)
    before = _balance(chain, customer)

    unrouted_refund(unrouted_id=unrouted.pk, by="ops")
    unrouted_refund(unrouted_id=unrouted.pk, by="ops")  # a double click
    payouts.payout_plan("sol")
    payouts.payout_monitor("sol", plan=False)
    chain.mine(FINAL)
    payouts.payout_monitor("sol")
    payouts.payout_monitor("sol")

    unrouted.refresh_from_db()
    withdrawal = Withdrawal.objects.get()
    assert withdrawal.company_id is None and withdrawal.status == Withdrawal.Status.DONE
    assert unrouted.status == UnroutedDeposit.Status.REFUNDED
    assert _balance(chain, customer) - before == (Decimal("0.5") - Decimal("0.001")) * SOL
    [refund] = ChainTx.objects.all()
    assert HouseEntry.objects.get(chain_tx=refund).amount == _fee(chain, refund.txid)  # the house paid it
    assert ledger_verify() == []


def test_a_refusal_is_told_apart_from_a_blockhash_the_node_does_not_know_yet(chain):
    _funded_hot(chain, sol=1)
    backend = get_backend("sol")
    hot = _hot_keypair()

    def signed(lamports: int, blockhash: Hash) -> SignedTx:
        message = payout_message(hot.pubkey(), RECIPIENT, lamports, blockhash, unit_limit=1_000, unit_price=0)
        wire = bytes(Transaction.populate(message, [hot.sign_message(bytes(message))]))
        far = 10**12  # a last valid height far ahead: the blockhash cannot have expired
        return SignedTx(txid=str(hot.sign_message(bytes(message))), raw=stored(wire, far), fee=Decimal(0))

    unknown = signed(SOL // 10, Hash(bytes([3] * 32)))  # a blockhash of a fork, or of a node ahead
    too_much = signed(5 * SOL, chain.devnet.blockhash())  # the simulation fails: more than the hot holds

    assert backend.broadcast("sol", unknown) == Outcome.UNAVAILABLE  # sent again later, not refused
    assert backend.broadcast("sol", too_much) == Outcome.REJECTED
    assert chain.devnet.status(too_much.txid) is None


def test_an_invoice_paid_and_a_withdrawal_made_over_http_on_the_devnet(chain, api, anon, merchant):
    """What an integrator sees through the API: the invoice `done` at finalized, then a withdrawal of the
    credited balance `done` with the signature the recipient's wallet shows."""
    _funded_hot(chain)
    created = api.post(
        "/api/invoices/v1/regular",
        {"invoiceCurrency": "usd", "items": [{"name": "Coffee", "price": "25"}], "isMerchantPaysFee": True},
        format="json",
    ).json()
    url = f"/api/invoices/v1/regular/{created['id']}"
    filled = anon.post(
        f"{url}/proceed", {"clientEmail": "client@example.com", "paymentCurrency": "sol"}, format="json"
    ).json()
    paid = chain.pay(filled["paymentDetails"]["amount"], references=(filled["address"]["tag"],))
    chain.scan(FINAL)
    done = anon.get(url).json()
    before = _balance(chain, RECIPIENT)

    asked = api.post(
        "/api/transactions/withdraw",
        {"items": [{"asset": "sol", "amount": "0.1", "to": str(RECIPIENT)}]},
        format="json",
    )
    [accepted] = asked.json()
    payouts.payout_plan("sol")
    payouts.payout_monitor("sol", plan=False)
    chain.mine(FINAL)
    payouts.payout_monitor("sol")
    withdrawal = api.get(f"/api/transactions/withdrawals/{accepted['uid']}").json()

    assert (filled["sandbox"], filled["address"]["address"]) == (False, chain.hot)
    assert done["status"] == "done"
    assert [t["txHash"] for t in done["invoiceTransactions"]] == [paid]
    assert asked.status_code == 200 and accepted["success"] is True
    assert withdrawal["status"] == "done"
    assert withdrawal["txHash"] == ChainTx.objects.get(withdrawal_links__withdrawal__uid=accepted["uid"]).txid
    assert _balance(chain, RECIPIENT) - before == 100_000_000
    assert ledger_verify() == []

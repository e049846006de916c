"""A withdrawal's life on the sandbox chain: broadcast, confirmations, done or rejected (docs/api.md)."""

import json
from decimal import Decimal

import pytest
from django.test import override_settings

from chains.backend import get_backend
from chains.base import Outcome, SignedTx
from chains.models import ChainTx
from payments.ledger import ledger_verify
from payments.models import SandboxTransaction
from tests.chain import api_mine, api_pay, fund, send_payouts
from webhooks.models import WebhookEvent
from withdrawals import payouts, tasks
from withdrawals.models import Withdrawal
from withdrawals.tests.conftest import (
    ADDRESSES,
    LIST,
    balance,
    client_for,
    drain_broker,
    item,
    run_broadcasts,
    withdraw,
    withdrawal_events,
)

# The documented keys in order, then the additive marker of a payment on the (enabled) sandbox chain.
WEBHOOK_KEYS = ["type", "status", "asset", "dchain", "amount", "fee", "to", "txHash", "uid", "sandbox"]


def _raw_bodies(uid):
    events = WebhookEvent.objects.filter(family="withdrawal", object_id=uid).order_by("created_at", "pk")
    return [e.body for e in events]


@pytest.mark.django_db(transaction=True)  # real commits: broadcasts reach the broker only after commit
def test_happy_flow_through_the_api_single_then_bulk(api, merchant):
    drain_broker()
    static = api.post(
        "/api/addresses/v1/static-deposits",
        {"internal_user_id": "treasury", "asset": "btc", "network": "btc"},
        format="json",
    ).json()
    api_pay(api, static["address"], "0.015", asset="btc")
    api_mine(api, 2)
    funded = balance(merchant.company, "btc")

    single = withdraw(api, item("btc", "0.001")).json()
    after_single = drain_broker()
    bulk = withdraw(
        api,
        item("btc", "0.002"),
        item("btc", "0.0005", to="3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy"),
        item("btc", "0.003", tag=""),
    ).json()
    after_bulk = drain_broker()
    api_mine(api, 1)
    one_confirmation = {w.status for w in Withdrawal.objects.all()}
    api_mine(api, 1)

    uids = [entry["uid"] for entry in single + bulk]
    assert funded == (Decimal("0.015"), Decimal(0))
    assert after_single == ["withdrawals.tasks.payout_plan", "withdrawals.tasks.payout_broadcast"]
    # A bulk is one plan message per code; the sandbox pays one withdrawal per transaction.
    assert after_bulk == ["withdrawals.tasks.payout_plan", *["withdrawals.tasks.payout_broadcast"] * 3]
    assert one_confirmation == {"processing"}  # btc needs 2 confirmations
    amounts = dict(zip(uids, ["0.001", "0.002", "0.0005", "0.003"], strict=True))
    for uid, amount in amounts.items():
        withdrawal = Withdrawal.objects.get(uid=uid)
        link = get_backend("btc").explorer_url("btc", withdrawal.txid)
        events = withdrawal_events(uid)
        assert [(e["status"], e["txHash"]) for e in events] == [
            ("processing", ""),
            ("processing", link),
            ("done", link),
        ]
        assert all(list(e) == WEBHOOK_KEYS for e in events)
        assert all(e["amount"] == Decimal(amount) and e["fee"] == "0.0001" for e in events)
        assert all(f'"amount":{amount},"fee":"0.0001",' in body for body in _raw_bodies(uid))
        assert withdrawal.status == "done" and withdrawal.settled_at is not None
    # funded - amounts - fees
    assert balance(merchant.company, "btc") == (
        Decimal("0.015") - Decimal("0.0065") - Decimal("0.0004"),
        Decimal(0),
    )
    assert ledger_verify() == []
    assert SandboxTransaction.objects.filter(kind="withdrawal").count() == 4
    detail = api.get(f"{LIST}/{uids[2]}").json()
    assert detail["status"] == "done"
    assert detail["to"] == "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy"
    assert detail["txHash"].endswith("/sandbox/tx/" + Withdrawal.objects.get(uid=uids[2]).txid)


@pytest.mark.django_db
def test_sandbox_reject_after_broadcast_releases_the_hold_and_sends_rejected_without_txhash(api, merchant):
    fund(merchant.company, "btc", "0.01")
    uid = withdraw(api, item("btc", "0.002")).json()[0]["uid"]
    run_broadcasts()

    response = api.post(f"/api/sandbox/withdrawals/{uid}/reject")
    again = api.post(f"/api/sandbox/withdrawals/{uid}/reject")
    api_mine(api, 3)

    assert response.status_code == 200
    assert response.json()["status"] == "rejected"
    assert response.json()["txHash"] is not None  # it was broadcast; the API keeps the link
    assert again.status_code == 409 and again.json()["code"] == "invalid_state"
    events = withdrawal_events(uid)
    assert [e["status"] for e in events] == ["processing", "processing", "rejected"]
    assert "txHash" not in events[2]
    assert list(events[2]) == [key for key in WEBHOOK_KEYS if key != "txHash"]
    assert balance(merchant.company, "btc") == (Decimal("0.01"), Decimal(0))
    assert SandboxTransaction.objects.get(kind="withdrawal").outcome == "fail"
    assert Withdrawal.objects.get(uid=uid).status == "rejected"  # later blocks change nothing
    assert ledger_verify() == []


@pytest.mark.django_db
def test_sandbox_reject_before_broadcast_then_the_planner_does_nothing(api, merchant):
    fund(merchant.company, "btc", "0.01")
    uid = withdraw(api, item()).json()[0]["uid"]

    api.post(f"/api/sandbox/withdrawals/{uid}/reject")
    tasks.payout_plan("btc")

    assert Withdrawal.objects.get(uid=uid).txid == ""
    assert not SandboxTransaction.objects.filter(kind="withdrawal").exists()
    assert [e["status"] for e in withdrawal_events(uid)] == ["processing", "rejected"]


@pytest.mark.django_db
def test_sandbox_reject_of_a_done_one_is_409_and_of_another_merchants_is_404(api, merchant, other_merchant):
    fund(merchant.company, "btc", "0.01")
    uid = withdraw(api, item()).json()[0]["uid"]
    run_broadcasts()
    api_mine(api, 2)

    done = api.post(f"/api/sandbox/withdrawals/{uid}/reject")
    foreign = client_for(other_merchant).post(f"/api/sandbox/withdrawals/{uid}/reject")
    unknown = api.post("/api/sandbox/withdrawals/001-999999/reject")

    assert done.status_code == 409
    assert foreign.status_code == 404 and foreign.json()["code"] == "not_found"
    assert unknown.status_code == 404
    assert Withdrawal.objects.get(uid=uid).status == "done"


@pytest.mark.django_db
@pytest.mark.parametrize(("outcome", "word"), [("fail", "failed"), ("freeze", "frozen")])
def test_a_transaction_failed_or_frozen_on_chain_rejects_the_withdrawal(api, merchant, outcome, word):
    fund(merchant.company, "trx", "100")
    uid = withdraw(api, item("trx", "20")).json()[0]["uid"]
    run_broadcasts()
    # The chain's decision (the sandbox's edge): this transaction will fail / be frozen once mined.
    SandboxTransaction.objects.filter(kind="withdrawal").update(outcome=outcome)

    api_mine(api)

    withdrawal = Withdrawal.objects.get(uid=uid)
    assert withdrawal.status == "rejected"
    assert word in withdrawal.reject_reason
    assert [e["status"] for e in withdrawal_events(uid)] == ["processing", "processing", "rejected"]
    assert balance(merchant.company, "trx") == (Decimal(100), Decimal(0))
    assert ledger_verify() == []


# --- screening -------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_denied_address_is_rejected_before_broadcast(api, merchant):
    fund(merchant.company, "eth", "1")
    denied = ADDRESSES["eth"].lower()  # the list is compared case-insensitively
    uid = withdraw(api, item("eth", "0.1")).json()[0]["uid"]
    other = withdraw(api, item("eth", "0.1", to="0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed")).json()[0][
        "uid"
    ]

    with override_settings(WITHDRAWAL_DENY_ADDRESSES=[denied]):
        run_broadcasts()

    refused = Withdrawal.objects.get(uid=uid)
    assert refused.status == "rejected" and refused.txid == ""
    assert "deny list" in refused.reject_reason
    assert [e["status"] for e in withdrawal_events(uid)] == ["processing", "rejected"]
    assert Withdrawal.objects.get(uid=other).txid != ""
    assert SandboxTransaction.objects.filter(kind="withdrawal").count() == 1
    assert balance(merchant.company, "eth") == (Decimal("0.8995"), Decimal("0.1005"))


class RefuseAboveOne:
    """A custom screen, as a deployment would plug one in through WITHDRAWAL_SCREEN."""

    def screen(self, withdrawal):
        if withdrawal.amount > 1:
            return False, "Amount needs manual review."
        return True, ""


@pytest.mark.django_db
@override_settings(WITHDRAWAL_SCREEN="withdrawals.tests.test_flow.RefuseAboveOne")
def test_the_screen_is_pluggable(api, merchant):
    fund(merchant.company, "ton", "10")
    small, big = (
        entry["uid"] for entry in withdraw(api, item("ton", "1", tag="7"), item("ton", "2", tag="7")).json()
    )

    run_broadcasts()

    assert Withdrawal.objects.get(uid=small).status == "processing"
    assert Withdrawal.objects.get(uid=big).reject_reason == "Amount needs manual review."


# --- retries and lost messages ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_retried_plan_or_broadcast_does_not_pay_twice(api, merchant):
    fund(merchant.company, "btc", "0.01")
    uid = withdraw(api, item()).json()[0]["uid"]

    (chain_tx_id,) = payouts.payout_plan("btc")
    assert payouts.payout_plan("btc") == []  # planned already: a transaction of it could still confirm
    tasks.payout_broadcast(chain_tx_id)
    txid = Withdrawal.objects.get(uid=uid).txid
    tasks.payout_broadcast(chain_tx_id)  # the message redelivered (acks_late)

    assert SandboxTransaction.objects.filter(reference=f"withdrawal:{uid}").count() == 1
    assert Withdrawal.objects.get(uid=uid).txid == txid == ChainTx.objects.get(pk=chain_tx_id).txid
    assert [e["status"] for e in withdrawal_events(uid)] == ["processing", "processing"]


@pytest.mark.django_db
def test_a_worker_killed_after_signing_but_before_broadcasting_is_sent_by_the_monitor(api, merchant):
    fund(merchant.company, "btc", "0.01")
    uid = withdraw(api, item()).json()[0]["uid"]
    (chain_tx_id,) = payouts.payout_plan("btc")  # stored, its broadcast message lost with the worker
    assert not SandboxTransaction.objects.filter(reference=f"withdrawal:{uid}").exists()

    payouts.payout_monitor("btc")

    stored = ChainTx.objects.get(pk=chain_tx_id)
    assert stored.status == "broadcast"
    assert Withdrawal.objects.get(uid=uid).txid == stored.txid
    assert SandboxTransaction.objects.get(reference=f"withdrawal:{uid}").txid == stored.txid


@pytest.mark.django_db
def test_a_worker_killed_after_broadcasting_but_before_recording_it_does_not_pay_twice(api, merchant):
    fund(merchant.company, "btc", "0.01")
    uid = withdraw(api, item()).json()[0]["uid"]
    (chain_tx_id,) = payouts.payout_plan("btc")
    stored = ChainTx.objects.get(pk=chain_tx_id)
    # What the killed worker left behind: the chain has the transaction, our rows do not say so.
    signed = SignedTx(txid=stored.txid, raw=stored.raw, fee=stored.fee)
    assert get_backend("btc").broadcast("btc", signed) == Outcome.ACCEPTED

    payouts.payout_monitor("btc")

    assert Withdrawal.objects.get(uid=uid).txid == stored.txid
    assert SandboxTransaction.objects.filter(reference=f"withdrawal:{uid}").count() == 1
    assert withdrawal_events(uid)[1]["txHash"].endswith(stored.txid)


@pytest.mark.django_db
def test_the_monitor_plans_and_sends_withdrawals_whose_messages_were_lost(api, merchant):
    # Outside a committed transaction no message is ever sent here: as if the broker lost them all.
    fund(merchant.company, "btc", "0.01")
    uids = [e["uid"] for e in withdraw(api, item(), item()).json()]

    payouts.payout_monitor("btc")  # plans and stores them
    stored = {w.uid: w.txid for w in Withdrawal.objects.filter(uid__in=uids)}
    payouts.payout_monitor("btc")  # sends what it stored

    assert stored == dict.fromkeys(uids, "")
    assert ChainTx.objects.filter(status="broadcast").count() == 2
    assert all(Withdrawal.objects.get(uid=uid).txid for uid in uids)


@pytest.mark.django_db
def test_the_monitor_settles_broadcast_withdrawals_when_blocks_are_not_announced(api, merchant):
    from chains import simulator as sandbox

    fund(merchant.company, "btc", "0.01")
    uid = withdraw(api, item()).json()[0]["uid"]
    send_payouts("btc")
    # Blocks arrive without the sandbox hook, as a real chain's do.
    hooks = list(sandbox.after_blocks)
    sandbox.after_blocks.clear()
    try:
        api_mine(api, 2)
    finally:
        sandbox.after_blocks.extend(hooks)
    still_open = Withdrawal.objects.get(uid=uid).status

    payouts.payout_monitor_all()

    assert still_open == "processing"
    assert Withdrawal.objects.get(uid=uid).status == "done"
    assert ChainTx.objects.get(txid=Withdrawal.objects.get(uid=uid).txid).status == "confirmed"
    assert [e["status"] for e in withdrawal_events(uid)] == ["processing", "processing", "done"]


@pytest.mark.django_db
def test_a_broadcast_message_for_an_unknown_transaction_is_ignored():
    assert payouts.payout_broadcast(999_999) is None


@pytest.mark.django_db
def test_webhooks_are_queued_for_delivery_when_the_merchant_has_a_url(api, merchant):
    merchant.company.webhook_url = "https://merchant.example/hooks"
    merchant.company.save(update_fields=["webhook_url"])
    fund(merchant.company, "btc", "0.01")

    uid = withdraw(api, item()).json()[0]["uid"]

    event = WebhookEvent.objects.get(family="withdrawal", object_id=uid)
    assert event.status == "pending"
    assert json.loads(event.body)["status"] == "processing"


@pytest.mark.django_db
def test_manage_py_sandbox_reject(api, merchant):
    from io import StringIO

    from django.core.management import CommandError, call_command

    fund(merchant.company, "btc", "0.01")
    uid = withdraw(api, item()).json()[0]["uid"]
    out = StringIO()

    call_command("sandbox", "reject", "--uid", uid, stdout=out)

    assert json.loads(out.getvalue()) == {"uid": uid, "status": "rejected"}
    assert balance(merchant.company, "btc") == (Decimal("0.01"), Decimal(0))
    with pytest.raises(CommandError, match="no withdrawal"):
        call_command("sandbox", "reject", "--uid", "nope", stdout=StringIO())
    with pytest.raises(CommandError, match="rejected"):
        call_command("sandbox", "reject", "--uid", uid, stdout=StringIO())


@pytest.mark.django_db
def test_an_amount_with_18_decimal_places_is_sent_and_settled_exactly(api, merchant):
    fund(merchant.company, "eth", "1.000000000000000001")
    uid = withdraw(api, item("eth", "0.123456789012345678")).json()[0]["uid"]

    run_broadcasts()
    api_mine(api, 12)

    assert SandboxTransaction.objects.get(kind="withdrawal").amount == Decimal("0.123456789012345678")
    assert Withdrawal.objects.get(uid=uid).status == "done"
    assert balance(merchant.company, "eth") == (Decimal("0.876043210987654323"), Decimal(0))
    assert ledger_verify() == []

"""Races on PostgreSQL (real row locks): each operation in its own thread and database connection."""

from decimal import Decimal

import pytest
from django.core.cache import cache

from payments.ledger import ledger_verify
from payments.models import Account, LedgerEntry, SandboxTransaction
from tests.chain import fund
from tests.workers import run_together
from webhooks.models import WebhookEvent
from withdrawals import payouts, tasks
from withdrawals.auto_withdrawals import auto_withdrawal_sweep, auto_withdrawal_sweep_due
from withdrawals.models import AutoWithdrawalRule, IdempotencyKey, Withdrawal
from withdrawals.tests.conftest import ADDRESSES, balance, client_for, item, withdraw

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _available_never_negative(company, code):
    running = Decimal(0)
    entries = LedgerEntry.objects.filter(account__company=company, account__code=code).order_by("pk")
    for available_delta in entries.values_list("available_delta", flat=True):
        running += available_delta
        assert running >= 0


def test_50_concurrent_withdrawals_against_a_balance_for_exactly_10(merchant):
    fund(merchant.company, "btc", "0.011")  # 10 x (0.001 + 0.0001 fee)
    calls = [lambda: withdraw(client_for(merchant), item("btc", "0.001")) for _ in range(50)]

    responses = run_together(calls)

    assert not [r for r in responses if isinstance(r, Exception)], responses
    statuses = [r.status_code for r in responses]
    assert statuses.count(200) == 10
    assert statuses.count(400) == 40
    assert {r.json()["code"] for r in responses if r.status_code == 400} == {"insufficient_balance"}
    assert len({r.json()[0]["uid"] for r in responses if r.status_code == 200}) == 10
    assert balance(merchant.company, "btc") == (Decimal(0), Decimal("0.011"))
    assert Withdrawal.objects.count() == 10
    assert WebhookEvent.objects.filter(family="withdrawal").count() == 10
    assert ledger_verify() == []
    _available_never_negative(merchant.company, "btc")


def test_20_concurrent_identical_requests_with_one_key_execute_once(merchant):
    fund(merchant.company, "btc", "1")
    headers = {"Idempotency-Key": "payout-2026-11-22"}
    calls = [
        lambda: withdraw(client_for(merchant), item("btc", "0.001"), item("btc", "0.002"), headers=headers)
        for _ in range(20)
    ]

    responses = run_together(calls)

    assert not [r for r in responses if isinstance(r, Exception)], responses
    assert [r.status_code for r in responses] == [200] * 20
    assert len({r.content for r in responses}) == 1
    assert sum(1 for r in responses if r.has_header("Idempotent-Replayed")) == 19
    assert Withdrawal.objects.count() == 2
    assert balance(merchant.company, "btc") == (Decimal("0.9968"), Decimal("0.0032"))
    assert IdempotencyKey.objects.get().status_code == 200
    assert ledger_verify() == []


def test_concurrent_sweeps_of_one_rule_create_one_withdrawal(merchant):
    AutoWithdrawalRule.objects.create(
        company=merchant.company,
        code="btc",
        amount=Decimal("0.01"),
        is_enabled=True,
        address=ADDRESSES["btc"],
    )
    fund(merchant.company, "btc", "0.05")
    rule = AutoWithdrawalRule.objects.get()
    calls = [lambda: auto_withdrawal_sweep(rule_id=rule.pk) for _ in range(5)]
    calls += [auto_withdrawal_sweep_due for _ in range(5)]

    outcomes = run_together(calls)

    assert not [o for o in outcomes if isinstance(o, Exception)], outcomes
    sweep = Withdrawal.objects.get()
    assert sweep.is_automatic and sweep.amount == Decimal("0.0499")
    assert balance(merchant.company, "btc") == (Decimal(0), Decimal("0.05"))
    assert ledger_verify() == []


def test_concurrent_planners_and_broadcasts_of_one_withdrawal_send_once(merchant, api):
    fund(merchant.company, "btc", "1")
    uid = withdraw(api, item()).json()[0]["uid"]

    def plan_without_the_lease() -> list[int]:
        cache.delete("payout-plan:btc")  # the store step's row locks alone must keep it to one plan
        return payouts._plan("btc")

    planned = run_together([plan_without_the_lease for _ in range(8)])
    assert not [o for o in planned if isinstance(o, Exception)], planned
    (chain_tx_id,) = [pk for result in planned for pk in result]
    outcomes = run_together([lambda: tasks.payout_broadcast(chain_tx_id) for _ in range(8)])

    assert not [o for o in outcomes if isinstance(o, Exception)], outcomes
    assert SandboxTransaction.objects.filter(reference=f"withdrawal:{uid}").count() == 1
    statuses = WebhookEvent.objects.filter(object_id=uid).values_list("event_status", flat=True)
    assert sorted(statuses) == ["processing", "processing"]


def test_concurrent_bulk_calls_over_two_assets_neither_deadlock_nor_overspend(merchant):
    fund(merchant.company, "btc", "0.0055")  # 5 x 0.0011
    fund(merchant.company, "eth", "0.0275")  # 5 x 0.0055
    forward = [item("btc", "0.001"), item("eth", "0.005")]
    backward = list(reversed(forward))
    calls = [
        (lambda items=(forward if i % 2 else backward): withdraw(client_for(merchant), *items))
        for i in range(12)
    ]

    responses = run_together(calls)

    assert not [r for r in responses if isinstance(r, Exception)], responses
    assert [r.status_code for r in responses].count(200) == 5
    assert {r.json()["code"] for r in responses if r.status_code != 200} == {"insufficient_balance"}
    accounts = Account.objects.filter(company=merchant.company)
    assert {a.code: a.available for a in accounts} == {"btc": Decimal(0), "eth": Decimal(0)}
    assert ledger_verify() == []

"""The payout policy in races on PostgreSQL (real row locks): each call in its own thread and connection."""

from decimal import Decimal

import pytest

from payments.ledger import ledger_verify
from tests.chain import fund
from tests.factories import PayoutPolicyFactory
from tests.workers import run_together
from withdrawals.auto_withdrawals import auto_withdrawal_sweep
from withdrawals.models import AutoWithdrawalRule, Withdrawal
from withdrawals.tests.conftest import ADDRESSES, balance, client_for, item, withdraw

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_concurrent_withdrawals_never_pass_the_24_hour_limit_together(merchant):
    fund(merchant.company, "btc", "1")  # plenty: only the limit can stop them
    PayoutPolicyFactory(company=merchant.company, limits={"btc": {"max_per_day": "0.005"}})
    calls = [lambda: withdraw(client_for(merchant), item("btc", "0.002")) for _ in range(10)]

    responses = run_together(calls)

    assert not [r for r in responses if isinstance(r, Exception)], responses
    statuses = [r.status_code for r in responses]
    assert statuses.count(200) == 2 and statuses.count(400) == 8
    assert {r.json()["code"] for r in responses if r.status_code == 400} == {"limit_exceeded"}
    assert Withdrawal.objects.count() == 2
    assert balance(merchant.company, "btc") == (Decimal("0.9958"), Decimal("0.0042"))
    assert ledger_verify() == []


def test_limited_and_unlimited_codes_bulks_and_sweeps_together_neither_deadlock_nor_overspend(merchant):
    company = merchant.company
    fund(company, "btc", "1")
    fund(company, "eth", "1")
    PayoutPolicyFactory(company=company, limits={"btc": {"max_per_day": "0.01"}, "eth": {"max_per_day": "1"}})
    rule = AutoWithdrawalRule.objects.create(
        company=company, code="btc", amount=Decimal("0.01"), is_enabled=True, address=ADDRESSES["btc"]
    )
    forward = [item("btc", "0.001"), item("eth", "0.005")]
    calls = [lambda: withdraw(client_for(merchant), *forward) for _ in range(6)]
    calls += [lambda: withdraw(client_for(merchant), *reversed(forward)) for _ in range(6)]
    calls += [lambda: withdraw(client_for(merchant), item("btc", "0.002")) for _ in range(4)]
    calls += [lambda: auto_withdrawal_sweep(rule_id=rule.pk) for _ in range(2)]

    outcomes = run_together(calls)

    assert not [o for o in outcomes if isinstance(o, Exception)], outcomes
    btc = Withdrawal.objects.filter(code="btc").exclude(status="rejected")
    assert sum((w.amount for w in btc), Decimal(0)) <= Decimal("0.01")
    assert ledger_verify() == []

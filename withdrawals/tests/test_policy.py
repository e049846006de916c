"""The payout policy (withdrawals.policy): limits per withdrawal and per 24 hours, the new-address cool-down
with its allowlist, approvals, cancelling a held withdrawal, who is subject, and the cost for the others."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.errors import InvalidState, NotFound, ValidationFailed
from core.wire import iso_utc
from payments.ledger import ledger_verify
from payments.models import Company
from tests.chain import fund, send_payouts
from tests.factories import PayoutPolicyFactory, TotpDeviceFactory, WithdrawalFactory
from webhooks.models import WebhookEvent
from withdrawals import policy, tasks
from withdrawals.approvals import CANCEL_REASON, withdrawal_approve, withdrawal_cancel
from withdrawals.auto_withdrawals import auto_withdrawal_sweep
from withdrawals.models import AutoWithdrawalRule, PayoutAddress, PayoutLimit, Withdrawal, WithdrawalTx
from withdrawals.policy import LimitInput, payout_address_add, payout_policy_set
from withdrawals.rules import WithdrawalItem
from withdrawals.services import withdrawal_reject, withdrawal_request
from withdrawals.tests.conftest import ADDRESSES, LIST, balance, item, withdraw, withdrawal_events

pytestmark = pytest.mark.django_db

OTHER_BTC = "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"
THIRD_BTC = "bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh"
TON = ADDRESSES["ton"]


class Clock:
    def __init__(self) -> None:
        self.now = timezone.now()

    def __call__(self):  # type: ignore[no-untyped-def]
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock(monkeypatch):
    """The policy's clock: holds, the 24-hour window, approvals (the planner reads it through `released`)."""
    now = Clock()
    monkeypatch.setattr(policy, "_now", now)
    return now


@pytest.fixture
def btc(merchant):
    fund(merchant.company, "btc", "1")
    return merchant.company


def _request(company, *items):
    return withdrawal_request(company=company, items=list(items))


def _btc(amount, to=ADDRESSES["btc"]):
    return WithdrawalItem(asset="btc", to=to, amount=Decimal(amount))


# --- limits -----------------------------------------------------------------------------------------------


def test_a_withdrawal_over_the_per_withdrawal_limit_is_a_400_limit_exceeded_and_writes_nothing(api, btc):
    PayoutPolicyFactory(company=btc, limits={"btc": {"max_per_withdrawal": "0.01"}})

    response = withdraw(api, item("btc", "0.0100001"))

    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "limit_exceeded"
    assert body["errors"] == [
        {
            "field": "items[0].amount",
            "code": "limit_exceeded",
            "message": "0.0100001 btc is over your limit of 0.01 btc per withdrawal",
        }
    ]
    assert not Withdrawal.objects.exists() and not WebhookEvent.objects.filter(family="withdrawal").exists()
    assert balance(btc, "btc") == (Decimal(1), Decimal(0))


def test_a_withdrawal_of_exactly_the_limit_is_accepted(api, btc):
    PayoutPolicyFactory(company=btc, limits={"btc": {"max_per_withdrawal": "0.01"}})

    assert withdraw(api, item("btc", "0.01")).status_code == 200


def test_the_24_hour_limit_counts_what_was_not_rejected_in_the_last_24_hours(btc, clock):
    PayoutPolicyFactory(company=btc, limits={"btc": {"max_per_day": "0.005"}})
    first, _ = _request(btc, _btc("0.002"), _btc("0.002"))

    with pytest.raises(ValidationFailed) as refused:
        _request(btc, _btc("0.002"))

    assert refused.value.code == "limit_exceeded"
    assert refused.value.errors[0].message == (
        "over your limit of 0.005 btc per 24 hours: 0.004 btc sent or on the way in the last 24 hours, "
        "0.002 btc more asked (amounts without network fees)"
    )
    assert Withdrawal.objects.count() == 2
    withdrawal_reject(uid=first.uid, reason="failed on chain")
    _request(btc, _btc("0.002"))  # 0.002 + 0.002: the rejected one no longer counts
    with pytest.raises(ValidationFailed):
        _request(btc, _btc("0.0015"))
    clock.advance(hours=24, seconds=1)
    _request(btc, _btc("0.005"))  # the window moved past every earlier withdrawal
    assert Withdrawal.objects.exclude(status="rejected").count() == 3
    assert ledger_verify() == []


def test_a_bulk_over_the_daily_limit_names_every_item_of_that_code_and_nothing_is_accepted(api, btc):
    fund(btc, "eth", "1")
    PayoutPolicyFactory(company=btc, limits={"btc": {"max_per_day": "0.005"}, "eth": {"max_per_day": "1"}})

    response = withdraw(api, item("btc", "0.003"), item("eth", "0.01"), item("btc", "0.003"))

    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "limit_exceeded"
    assert [error["field"] for error in body["errors"]] == ["items[0].amount", "items[2].amount"]
    assert not Withdrawal.objects.exists()
    assert balance(btc, "btc") == (Decimal(1), Decimal(0)) and balance(btc, "eth") == (Decimal(1), Decimal(0))


def test_a_limit_of_one_code_leaves_the_others_alone(api, btc):
    fund(btc, "eth", "1")
    PayoutPolicyFactory(company=btc, limits={"btc": {"max_per_withdrawal": "0.001"}})

    assert withdraw(api, item("eth", "0.5")).status_code == 200


def test_the_daily_limit_does_not_count_another_merchants_withdrawals(btc, other_merchant):
    PayoutPolicyFactory(company=btc, limits={"btc": {"max_per_day": "0.005"}})
    WithdrawalFactory(company=other_merchant.company, amount="0.004")

    _request(btc, _btc("0.005"))


# --- the settings -----------------------------------------------------------------------------------------


def test_the_active_flag_follows_the_rules(merchant):
    company = merchant.company

    payout_policy_set(company=company, cooldown_hours=0, limits={"btc": LimitInput(max_per_day=Decimal(1))})
    assert Company.objects.get(pk=company.pk).payout_policy_active is True
    payout_policy_set(company=company, cooldown_hours=6, limits={"btc": LimitInput()})
    assert Company.objects.get(pk=company.pk).payout_policy_active is True
    assert not PayoutLimit.objects.exists()
    payout_policy_set(company=company, cooldown_hours=0, limits={})
    assert Company.objects.get(pk=company.pk).payout_policy_active is False


@pytest.mark.parametrize(
    ("cooldown", "limit", "field", "message"),
    [
        (-1, LimitInput(), "new_address_cooldown_hours", "from 0 to 720 hours"),
        (721, LimitInput(), "new_address_cooldown_hours", "from 0 to 720 hours"),
        (0, LimitInput(max_per_day=Decimal(0)), "limits.btc.max_per_day", "must be greater than 0"),
        (0, LimitInput(max_per_withdrawal=Decimal("-1")), "limits.btc.max_per_withdrawal", "greater than 0"),
        (0, LimitInput(max_per_day=Decimal("0.000000001")), "limits.btc.max_per_day", "at most 8 decimals"),
        (0, LimitInput(approval_above=Decimal(1)), "limits.btc.approval_above", "two-factor"),
    ],
)
def test_a_bad_policy_is_refused_whole(merchant, cooldown, limit, field, message):
    with pytest.raises(ValidationFailed) as refused:
        payout_policy_set(
            company=merchant.company,
            cooldown_hours=cooldown,
            limits={"eth": LimitInput(max_per_day=Decimal(1)), "btc": limit},
        )

    assert [(e.field, message in e.message) for e in refused.value.errors] == [(field, True)]
    assert not PayoutLimit.objects.exists()
    assert Company.objects.get(pk=merchant.company.pk).payout_policy_active is False


def test_an_unknown_code_is_refused(merchant):
    with pytest.raises(ValidationFailed) as refused:
        payout_policy_set(company=merchant.company, cooldown_hours=0, limits={"doge": LimitInput()})

    assert refused.value.errors[0].field == "limits.doge"


def test_an_approval_threshold_is_accepted_once_the_owner_has_two_factor(merchant):
    TotpDeviceFactory(user=merchant.company.owner)

    changes = payout_policy_set(
        company=merchant.company, cooldown_hours=0, limits={"btc": LimitInput(approval_above=Decimal("0.5"))}
    )

    assert changes == ["btc approval_above none -> 0.5"]


# --- the new-address cool-down ------------------------------------------------------------------------------


def test_a_new_address_is_held_and_sent_by_the_monitor_once_the_cool_down_ended(api, btc, clock):
    PayoutPolicyFactory(company=btc, cooldown_hours=24)

    uid = withdraw(api, item("btc", "0.001")).json()[0]["uid"]

    withdrawal = Withdrawal.objects.get(uid=uid)
    assert withdrawal.hold_until == clock.now + timedelta(hours=24)
    assert withdrawal.status == "processing" and not withdrawal.approval_required
    assert balance(btc, "btc") == (Decimal("0.9989"), Decimal("0.0011"))  # held from the start
    detail = api.get(f"{LIST}/{uid}").json()
    assert detail["status"] == "processing"
    assert detail["hold"] == {
        "reasons": ["new_address"],
        "until": iso_utc(clock.now + timedelta(hours=24)),
    }
    assert send_payouts("btc") == []  # the planner leaves it alone
    clock.advance(hours=23, minutes=59)
    tasks.payout_monitor_all()
    assert not WithdrawalTx.objects.filter(withdrawal=withdrawal).exists()

    clock.advance(minutes=1)
    tasks.payout_monitor_all()  # beat's periodic run: nobody did anything

    assert WithdrawalTx.objects.filter(withdrawal=withdrawal).exists()
    assert api.get(f"{LIST}/{uid}").json()["hold"] is None


def test_an_address_paid_before_is_not_held(btc, clock):
    WithdrawalFactory(company=btc, status="done")  # to ADDRESSES["btc"], before any policy
    WithdrawalFactory(company=btc, to=OTHER_BTC)  # processing, never held
    PayoutPolicyFactory(company=btc, cooldown_hours=24)

    paid, pending, new = _request(btc, _btc("0.001"), _btc("0.001", OTHER_BTC), _btc("0.001", THIRD_BTC))

    assert (paid.hold_until, pending.hold_until) == (None, None)
    assert new.hold_until == clock.now + timedelta(hours=24)


def test_an_address_still_cooling_down_proves_nothing(btc, clock):
    PayoutPolicyFactory(company=btc, cooldown_hours=24)
    (first,) = _request(btc, _btc("0.001", OTHER_BTC))

    (second,) = _request(btc, _btc("0.001", OTHER_BTC))

    assert first.hold_until and second.hold_until
    clock.advance(hours=24, seconds=1)
    (third,) = _request(btc, _btc("0.001", OTHER_BTC))  # the first one's cool-down is over: paid
    assert third.hold_until is None


def test_an_allowlisted_address_skips_the_cool_down_but_its_tag_counts(merchant, clock):
    fund(merchant.company, "btc", "1")
    fund(merchant.company, "ton", "100")
    PayoutPolicyFactory(company=merchant.company, cooldown_hours=12)
    payout_address_add(company=merchant.company, code="btc", address=OTHER_BTC, tag="", label="Cold wallet")
    payout_address_add(company=merchant.company, code="ton", address=TON, tag="100", label="Exchange")

    allowed, same_tag, other_tag = _request(
        merchant.company,
        _btc("0.001", OTHER_BTC),
        WithdrawalItem(asset="ton", to=TON, amount=Decimal(2), tag="100"),
        WithdrawalItem(asset="ton", to=TON, amount=Decimal(2), tag="200"),
    )

    assert (allowed.hold_until, same_tag.hold_until) == (None, None)
    assert other_tag.hold_until == clock.now + timedelta(hours=12)  # someone else's memo at that exchange


def test_the_allowlist_refuses_a_bad_or_duplicate_address(merchant):
    payout_address_add(company=merchant.company, code="btc", address=OTHER_BTC, tag="", label="")

    with pytest.raises(ValidationFailed) as duplicate:
        payout_address_add(company=merchant.company, code="BTC", address=OTHER_BTC, tag="", label="")
    with pytest.raises(ValidationFailed) as wrong:
        payout_address_add(company=merchant.company, code="btc", address=ADDRESSES["trx"], tag="", label="")

    assert duplicate.value.errors[0].code == "duplicate"
    assert wrong.value.errors[0].code == "invalid_address"
    assert PayoutAddress.objects.count() == 1


# --- approvals and cancelling -----------------------------------------------------------------------------


@pytest.fixture
def approvals(btc):
    TotpDeviceFactory(user=btc.owner)
    PayoutPolicyFactory(company=btc, limits={"btc": {"approval_above": "0.01"}})
    return btc


def test_above_the_threshold_a_withdrawal_waits_for_its_approval(api, approvals):
    small, large = withdraw(api, item("btc", "0.01"), item("btc", "0.02")).json()

    assert api.get(f"{LIST}/{small['uid']}").json()["hold"] is None
    assert api.get(f"{LIST}/{large['uid']}").json()["hold"] == {"reasons": ["approval"], "until": None}
    send_payouts("btc")
    assert Withdrawal.objects.get(uid=large["uid"]).txid == ""
    assert Withdrawal.objects.get(uid=small["uid"]).txid != ""

    approved = withdrawal_approve(company=approvals, uid=large["uid"])

    assert approved.approved_at is not None
    assert api.get(f"{LIST}/{large['uid']}").json()["hold"] is None
    send_payouts("btc")
    assert Withdrawal.objects.get(uid=large["uid"]).txid != ""


def test_approval_is_for_held_withdrawals_of_ones_own_company(approvals, other_merchant):
    (plain,) = _request(approvals, _btc("0.001"))
    (large,) = _request(approvals, _btc("0.02"))

    with pytest.raises(InvalidState):
        withdrawal_approve(company=approvals, uid=plain.uid)
    with pytest.raises(NotFound):
        withdrawal_approve(company=other_merchant.company, uid=large.uid)
    first = withdrawal_approve(company=approvals, uid=large.uid)
    again = withdrawal_approve(company=approvals, uid=large.uid)
    assert first.approved_at == again.approved_at


def test_cancelling_a_held_withdrawal_rejects_it_and_releases_the_hold(btc, clock):
    PayoutPolicyFactory(company=btc, cooldown_hours=24)
    (held,) = _request(btc, _btc("0.001", OTHER_BTC))
    assert balance(btc, "btc") == (Decimal("0.9989"), Decimal("0.0011"))

    cancelled = withdrawal_cancel(company=btc, uid=held.uid)

    assert (cancelled.status, cancelled.reject_reason) == ("rejected", CANCEL_REASON)
    assert balance(btc, "btc") == (Decimal(1), Decimal(0))
    assert [event["status"] for event in withdrawal_events(held.uid)] == ["processing", "rejected"]
    assert withdrawal_cancel(company=btc, uid=held.uid).status == "rejected"  # twice: once
    assert len(withdrawal_events(held.uid)) == 2
    assert ledger_verify() == []


def test_only_a_held_withdrawal_can_be_cancelled(btc, clock, other_merchant):
    PayoutPolicyFactory(company=btc, cooldown_hours=1)
    (held,) = _request(btc, _btc("0.001", OTHER_BTC))
    (plain,) = _request(btc, _btc("0.001", OTHER_BTC))

    with pytest.raises(NotFound):
        withdrawal_cancel(company=other_merchant.company, uid=held.uid)
    clock.advance(hours=1)  # released: the planner may be sending it
    with pytest.raises(InvalidState):
        withdrawal_cancel(company=btc, uid=held.uid)
    assert Withdrawal.objects.get(uid=plain.uid).status == "processing"


# --- who is subject -----------------------------------------------------------------------------------------


def test_a_sweep_is_capped_by_the_limits_and_held_at_a_new_address(merchant, clock):
    company = merchant.company
    fund(company, "btc", "0.05")
    PayoutPolicyFactory(company=company, cooldown_hours=24, limits={"btc": {"max_per_withdrawal": "0.02"}})
    rule = AutoWithdrawalRule.objects.create(
        company=company, code="btc", amount=Decimal("0.01"), is_enabled=True, address=OTHER_BTC
    )

    sweep = auto_withdrawal_sweep(rule_id=rule.pk)

    assert sweep is not None and sweep.is_automatic
    assert sweep.amount == Decimal("0.02")  # not 0.0499: the rest goes with a later sweep
    assert sweep.hold_until == clock.now + timedelta(hours=24)
    assert balance(company, "btc") == (Decimal("0.0299"), Decimal("0.0201"))


def test_a_sweep_waits_while_the_daily_limit_is_used_up(merchant, clock):
    company = merchant.company
    fund(company, "btc", "0.05")
    PayoutPolicyFactory(company=company, limits={"btc": {"max_per_day": "0.01"}})
    _request(company, _btc("0.01"))
    rule = AutoWithdrawalRule.objects.create(
        company=company, code="btc", amount=Decimal("0.01"), is_enabled=True, address=OTHER_BTC
    )

    assert auto_withdrawal_sweep(rule_id=rule.pk) is None
    clock.advance(hours=24, seconds=1)
    assert auto_withdrawal_sweep(rule_id=rule.pk).amount == Decimal("0.01")


def test_a_refund_is_not_subject_to_the_policy(api, anon, merchant, settings, tmp_path, clock):
    from withdrawals.tests.test_refunds import INVOICES, _wrong_invoice

    settings.RATES_PROVIDER = "static"
    settings.RATES_STATIC_USD = {**settings.RATES_STATIC_USD, "btc": "100000"}
    settings.RATES_FILE = str(tmp_path / "no-rates.json")
    settings.INVOICE_FEE_PERCENT = "1"
    PayoutPolicyFactory(
        company=merchant.company, cooldown_hours=24, limits={"btc": {"max_per_withdrawal": "0.0001"}}
    )
    invoice_id = _wrong_invoice(api, anon, paid="0.0008")

    response = api.post(f"{INVOICES}/{invoice_id}/refund", {"address": OTHER_BTC}, format="json")

    assert response.status_code == 200
    refund = Withdrawal.objects.get(is_refund=True)
    assert refund.amount == Decimal("0.0007") and refund.hold_until is None and not refund.approval_required


# --- what it costs without a policy ------------------------------------------------------------------------


def test_without_a_policy_a_withdrawal_makes_no_query_of_it(merchant):
    fund(merchant.company, "btc", "1")
    _request(merchant.company, _btc("0.001"))  # the first also creates the uid counter
    PayoutPolicyFactory(company=merchant.company, cooldown_hours=1)
    PayoutPolicyFactory(company=merchant.company, cooldown_hours=0)  # removed again: the flag is off
    company = Company.objects.get(pk=merchant.company.pk)
    assert company.payout_policy_active is False

    with CaptureQueriesContext(connection) as queries:
        _request(company, _btc("0.001"))

    statements = [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]
    assert not [s for s in statements if "withdrawals_payout" in s]
    # What it was before payout policies existed: on PostgreSQL the one-statement hold and the one insert
    # (test_accept_statements counts the request's 5 with BEGIN, COMMIT and the token); on SQLite the
    # locking path: the account's lock, the counter, the balance, the entry, the withdrawal, the event.
    expected = 2 if connection.vendor == "postgresql" else 6
    assert len(statements) == expected, "\n".join(s[:100] for s in statements)


def test_with_a_policy_the_reads_are_bounded(merchant):
    fund(merchant.company, "btc", "1")
    _request(merchant.company, _btc("0.001"))
    PayoutPolicyFactory(company=merchant.company, cooldown_hours=1, limits={"btc": {"max_per_day": "1"}})
    company = Company.objects.get(pk=merchant.company.pk)

    with CaptureQueriesContext(connection) as queries:
        _request(company, _btc("0.001"), _btc("0.001", OTHER_BTC))

    policy_reads = [q["sql"] for q in queries.captured_queries if "withdrawals_payout" in q["sql"]]
    assert len(policy_reads) == 3  # the limits, the policy row (locked), the allowlist
    lock = next(s for s in policy_reads if "withdrawals_payoutpolicy" in s)
    assert "FOR UPDATE" in lock or connection.vendor == "sqlite"

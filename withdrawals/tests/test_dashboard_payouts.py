"""Dashboard payouts: a confirmation page before anything is sent, a step-up asked for on it, one payout per
confirmation whatever is resubmitted; the payout policy page, the allowlist, approvals and cancelling, and
the step-up of auto-withdrawal rules. Every action is in the audit log."""

# ruff: noqa: F811 - the fixtures imported from test_dashboard_support are this module's test parameters

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pyotp
import pytest
from django.utils import timezone

from security.models import AuditEvent
from security.testing import forget_step_up, mark_step_up_fresh
from tests.chain import fund
from tests.dashboard import (  # noqa: F401 - fixtures
    dash,
    dashboard_rates,
    text,
)
from tests.factories import PASSWORD, PayoutPolicyFactory, TotpDeviceFactory
from withdrawals.models import AutoWithdrawalRule, PayoutAddress, PayoutDraft, PayoutLimit, Withdrawal
from withdrawals.tests.conftest import ADDRESSES, balance

pytestmark = pytest.mark.django_db

NEW = "/dashboard/withdrawals/new/"
BULK = "/dashboard/withdrawals/bulk/"
RULES = "/dashboard/withdrawals/rules/"
POLICY = "/dashboard/withdrawals/policy/"
ADD_ADDRESS = "/dashboard/withdrawals/policy/addresses/"
BTC = ADDRESSES["btc"]
OTHER_BTC = "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"
TRON = ADDRESSES["trx"]


def _actions(company) -> list[str]:  # type: ignore[no-untyped-def]
    return list(AuditEvent.objects.filter(company=company).order_by("pk").values_list("action", flat=True))


def _prepare(dash, amount="0.005", to=BTC):  # type: ignore[no-untyped-def]
    """The single form, filled in and submitted: the confirmation page's address."""
    response = dash.post(NEW, {"asset": "btc", "to": to, "amount": amount, "tag": ""})
    assert response.status_code == 303, text(response)
    assert re.fullmatch(r"/dashboard/withdrawals/confirm/[\w-]{40,}/", response["Location"])
    return response["Location"]


@pytest.fixture
def btc(merchant):  # type: ignore[no-untyped-def]
    fund(merchant.company, "btc", "0.01")
    return merchant.company


# --- the confirmation page ----------------------------------------------------------------------------


def test_the_form_leads_to_a_confirmation_page_and_holds_nothing(dash, btc):
    confirm = _prepare(dash)

    html = text(dash.get(confirm))

    assert not Withdrawal.objects.exists()
    assert balance(btc, "btc") == (Decimal("0.01"), Decimal(0))
    assert BTC in html and "0.005" in html and "0.0001" in html
    assert 'data-testid="total-btc">0.0051 btc<' in html  # amount + network fee
    assert 'name="secret"' in html  # the session is not fresh: the step-up is asked for here


def test_without_the_step_up_nothing_is_sent(dash, btc):
    confirm = _prepare(dash)

    empty = dash.post(confirm, {"secret": ""})
    wrong = dash.post(confirm, {"secret": "not my password"})

    assert (empty.status_code, wrong.status_code) == (200, 200)
    assert "Enter your password or a code from your authenticator app" in text(empty)
    assert "That is not your password" in text(wrong)
    assert not Withdrawal.objects.exists()
    assert _actions(btc) == ["stepup.fail"]  # the empty field was no attempt


def test_the_password_on_the_page_sends_it_once(dash, btc):
    confirm = _prepare(dash)

    sent = dash.post(confirm, {"secret": PASSWORD})

    assert sent.status_code == 303 and sent["Location"] == confirm
    withdrawal = Withdrawal.objects.get()
    assert (withdrawal.amount, withdrawal.to_address) == (Decimal("0.005"), BTC)
    assert balance(btc, "btc") == (Decimal("0.0049"), Decimal("0.0051"))
    page = text(dash.get(confirm))
    assert "1 withdrawal accepted" in page and withdrawal.uid in page and 'name="secret"' not in page
    assert _actions(btc) == ["stepup.confirm", "withdrawal.create"]
    assert withdrawal.uid in AuditEvent.objects.get(action="withdrawal.create").detail


def test_a_resubmission_shows_the_same_result_and_sends_nothing_more(dash, btc):
    confirm = _prepare(dash)
    dash.post(confirm, {"secret": PASSWORD})
    forget_step_up(dash.client)  # later, the session no longer fresh: the replay needs no step-up

    again = dash.post(confirm, {"secret": ""})
    back = dash.get(confirm)

    assert again.status_code == 302 and again["Location"] == confirm
    assert Withdrawal.objects.count() == 1
    assert "1 withdrawal accepted" in text(back)
    assert _actions(btc).count("withdrawal.create") == 1


def test_a_fresh_session_sends_without_typing_anything(dash, btc):
    mark_step_up_fresh(dash.client)
    confirm = _prepare(dash)

    assert 'name="secret"' not in text(dash.get(confirm))
    assert dash.post(confirm).status_code == 303
    assert Withdrawal.objects.count() == 1


def test_a_confirmation_is_its_merchants_own_and_expires(dash, btc, other_merchant):
    confirm = _prepare(dash)
    other = PayoutDraft.objects.create(
        token="x" * 43, company=other_merchant.company, kind="single", items=[]
    )
    mark_step_up_fresh(dash.client)

    assert dash.post(f"/dashboard/withdrawals/confirm/{other.token}/").status_code == 404
    assert dash.get("/dashboard/withdrawals/confirm/nope/").status_code == 404
    PayoutDraft.objects.filter(company=btc).update(created_at=timezone.now() - timedelta(hours=25))
    assert dash.post(confirm).status_code == 404
    assert not Withdrawal.objects.exists()


def test_a_balance_short_by_the_time_of_confirmation_sends_nothing(dash, btc):
    confirm = _prepare(dash, amount="0.009")  # 0.0091 of the 0.01
    mark_step_up_fresh(dash.client)
    dash.post(_prepare(dash, amount="0.002"))  # another withdrawal takes 0.0021 meanwhile

    refused = dash.post(confirm)

    assert refused.status_code == 200
    assert "btc available 0.0079, requested 0.0091" in text(refused)
    assert Withdrawal.objects.count() == 1
    fund(btc, "btc", "0.01")
    assert dash.post(confirm).status_code == 303  # the same confirmation, once there is enough
    assert Withdrawal.objects.count() == 2


def test_a_bulk_file_goes_through_the_confirmation_page_with_totals_per_asset(dash, btc):
    fund(btc, "trx", "100")
    lines = f"btc,{BTC},0.001,\nbtc,{OTHER_BTC},0.002,\ntrx,{TRON},25,\n"

    prepared = dash.post(BULK, {"action": "send", "csv": lines})

    assert prepared.status_code == 303 and not Withdrawal.objects.exists()
    html = text(dash.get(prepared["Location"]))
    assert 'data-testid="total-btc">0.0032 btc<' in html  # 0.001 + 0.002 + two fees of 0.0001
    assert 'data-testid="total-trx">26 trx<' in html and OTHER_BTC in html and TRON in html
    sent = dash.post(prepared["Location"], {"secret": PASSWORD})
    assert sent.status_code == 303
    withdrawals = list(Withdrawal.objects.order_by("pk"))
    assert len(withdrawals) == 3 and len({w.request_id for w in withdrawals}) == 1
    assert _actions(btc) == ["stepup.confirm", "withdrawal.bulk"]


# --- the payout policy on these pages -----------------------------------------------------------------------


def test_a_withdrawal_over_a_limit_is_refused_on_the_form(dash, btc):
    PayoutPolicyFactory(company=btc, limits={"btc": {"max_per_withdrawal": "0.001"}})

    response = dash.post(NEW, {"asset": "btc", "to": BTC, "amount": "0.002", "tag": ""})

    assert response.status_code == 200
    assert "0.002 btc is over your limit of 0.001 btc per withdrawal" in text(response)
    assert not PayoutDraft.objects.exists()


def test_a_limit_set_after_the_confirmation_page_still_refuses_it(dash, btc):
    confirm = _prepare(dash, amount="0.005")
    PayoutPolicyFactory(company=btc, limits={"btc": {"max_per_day": "0.004"}})

    refused = dash.post(confirm, {"secret": PASSWORD})

    assert refused.status_code == 200 and "over your limit of 0.004 btc per 24 hours" in text(refused)
    assert not Withdrawal.objects.exists()


def test_a_bulk_over_a_limit_is_refused_on_its_lines(dash, btc):
    PayoutPolicyFactory(company=btc, limits={"btc": {"max_per_day": "0.002"}})

    response = dash.post(BULK, {"action": "send", "csv": f"btc,{BTC},0.001,\nbtc,{BTC},0.0015,\n"})

    assert response.status_code == 200
    assert "over your limit of 0.002 btc per 24 hours" in text(response)
    assert not PayoutDraft.objects.exists()


def test_a_held_withdrawal_shows_why_and_until_when(dash, btc):
    PayoutPolicyFactory(company=btc, cooldown_hours=24)
    confirm = _prepare(dash, to=OTHER_BTC)
    assert "will be held" in text(dash.get(confirm))
    dash.post(confirm, {"secret": PASSWORD})
    withdrawal = Withdrawal.objects.get()
    until = withdrawal.hold_until.strftime("%Y-%m-%d %H:%M")

    listed = text(dash.get("/dashboard/withdrawals/"))
    detail = text(dash.get(f"/dashboard/withdrawals/{withdrawal.uid}/"))

    assert f"new address, until {until} UTC" in listed and "Cancel" in listed
    assert f"new address, until {until} UTC" in detail and "Cancel withdrawal" in detail
    assert "Approve" not in detail


def test_approving_takes_a_code_from_the_authenticator(dash, btc):
    device = TotpDeviceFactory(user=btc.owner)
    PayoutPolicyFactory(company=btc, limits={"btc": {"approval_above": "0.001"}})
    mark_step_up_fresh(dash.client)
    dash.post(_prepare(dash, amount="0.002"))
    withdrawal = Withdrawal.objects.get()
    assert "awaiting approval" in text(dash.get(f"/dashboard/withdrawals/{withdrawal.uid}/"))
    approve = f"/dashboard/withdrawals/{withdrawal.uid}/approve/"
    current = pyotp.TOTP(device.secret).now()
    wrong = next(code for code in ("000000", "111111", "222222") if code != current)

    refused = dash.post(approve, {"code": wrong}, follow=True)
    approved = dash.post(approve, {"code": current}, follow=True)

    assert "That is not a current authenticator code." in text(refused)
    assert f"Withdrawal {withdrawal.uid} approved" in text(approved)
    withdrawal.refresh_from_db()
    assert withdrawal.approved_at is not None
    assert _actions(btc)[-1] == "withdrawal.approve"
    assert dash.post(approve, {"code": current}, follow=True).status_code == 200  # a replayed code
    assert _actions(btc).count("withdrawal.approve") == 1


def test_cancelling_needs_the_step_up_and_returns_the_amount(dash, btc):
    PayoutPolicyFactory(company=btc, cooldown_hours=24)
    dash.post(_prepare(dash, to=OTHER_BTC), {"secret": PASSWORD})
    forget_step_up(dash.client)
    withdrawal = Withdrawal.objects.get()
    cancel = f"/dashboard/withdrawals/{withdrawal.uid}/cancel/"

    refused = dash.post(cancel, {"secret": "guess"}, follow=True)
    assert "That is not your password" in text(refused)
    assert Withdrawal.objects.get().status == "processing"

    done = dash.post(cancel, {"secret": PASSWORD}, follow=True)

    assert "cancelled: 0.0051 btc is available again" in text(done)
    assert Withdrawal.objects.get().status == "rejected"
    assert balance(btc, "btc") == (Decimal("0.01"), Decimal(0))
    assert _actions(btc)[-1] == "withdrawal.cancel"


def test_the_policy_page_saves_after_the_step_up_and_audits(dash, merchant):
    body = {"cooldown_hours": "24", "one_btc": "0.5", "day_btc": "2", "approval_btc": ""}

    refused = dash.post(POLICY, body)
    saved = dash.post(POLICY, {**body, "secret": PASSWORD})

    assert refused.status_code == 200 and saved.status_code == 303
    limit = PayoutLimit.objects.get()
    assert (limit.code, limit.max_per_withdrawal, limit.max_per_day, limit.approval_above) == (
        "btc",
        Decimal("0.5"),
        Decimal("2"),
        None,
    )
    merchant.company.refresh_from_db()
    assert merchant.company.payout_policy_active is True
    event = AuditEvent.objects.get(action="payout_policy.change")
    assert "cool-down 0 h -> 24 h" in event.detail and "btc max_per_withdrawal none -> 0.5" in event.detail
    html = text(dash.get(POLICY))
    assert 'value="0.5"' in html and 'value="24"' in html


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"approval_btc": "1"}, "turn on two-factor authentication first"),
        ({"one_btc": "abc"}, "Must be a plain decimal number"),
        ({"one_btc": "0.000000001"}, "btc amounts have at most 8 decimals"),
        ({"cooldown_hours": "721"}, "less than or equal to 720"),
        ({"cooldown_hours": "x"}, "Enter a whole number."),
    ],
)
def test_a_bad_policy_is_explained_and_nothing_saved(dash, merchant, body, message):
    mark_step_up_fresh(dash.client)

    response = dash.post(POLICY, {"cooldown_hours": "0", **body})

    assert response.status_code == 200
    assert message in text(response)
    assert not PayoutLimit.objects.exists()
    assert not AuditEvent.objects.filter(action="payout_policy.change").exists()


def test_the_allowlist_is_changed_with_the_step_up(dash, merchant, other_merchant):
    body = {"address-asset": "btc", "address-address": OTHER_BTC, "address-label": "Cold wallet"}

    refused = dash.post(ADD_ADDRESS, body)
    added = dash.post(ADD_ADDRESS, {**body, "address-secret": PASSWORD})

    assert refused.status_code == 200 and added.status_code == 303
    entry = PayoutAddress.objects.get()
    assert (entry.code, entry.address, entry.label) == ("btc", OTHER_BTC, "Cold wallet")
    assert "Cold wallet" in text(dash.get(POLICY))
    remove = f"/dashboard/withdrawals/policy/addresses/{entry.pk}/remove/"
    forget_step_up(dash.client)
    assert dash.post(remove).status_code == 200 and PayoutAddress.objects.exists()  # the step-up page
    mark_step_up_fresh(dash.client)
    other = PayoutAddress.objects.create(company=other_merchant.company, code="btc", address=BTC)
    assert dash.post(f"/dashboard/withdrawals/policy/addresses/{other.pk}/remove/").status_code == 404
    assert dash.post(remove).status_code == 303
    assert list(PayoutAddress.objects.all()) == [other]
    assert _actions(merchant.company) == ["stepup.confirm", "payout_address.add", "payout_address.remove"]


def test_a_bad_allowlist_address_is_explained(dash, merchant):
    mark_step_up_fresh(dash.client)

    response = dash.post(ADD_ADDRESS, {"address-asset": "btc", "address-address": TRON})

    assert response.status_code == 200 and "not a valid btc address" in text(response)
    assert not PayoutAddress.objects.exists()


def test_auto_withdrawal_rules_are_changed_with_the_step_up(dash, merchant):
    body = {"enabled_btc": "on", "amount_btc": "0.01", "address_btc": BTC, "tag_btc": ""}

    refused = dash.post(RULES, body)
    assert refused.status_code == 200 and "Enter your password" in text(refused)
    assert not AutoWithdrawalRule.objects.exists()

    saved = dash.post(RULES, {**body, "secret": PASSWORD})

    assert saved.status_code == 302
    assert AutoWithdrawalRule.objects.get().address == BTC
    assert _actions(merchant.company) == ["stepup.confirm", "auto_withdrawal.change"]


def test_the_rules_errors_come_before_the_step_up(dash, merchant):
    response = dash.post(RULES, {"enabled_btc": "on", "amount_btc": "0.01", "address_btc": TRON})

    assert response.status_code == 200 and "not a valid btc address" in text(response)
    assert _actions(merchant.company) == []


def test_confirmations_are_purged_with_the_idempotency_keys(dash, btc):
    from withdrawals import tasks

    old, recent = _prepare(dash), _prepare(dash, amount="0.001")
    PayoutDraft.objects.filter(token=old.split("/")[-2]).update(
        created_at=timezone.now() - timedelta(hours=25)
    )

    tasks.idempotency_keys_purge()

    assert list(PayoutDraft.objects.values_list("token", flat=True)) == [recent.split("/")[-2]]

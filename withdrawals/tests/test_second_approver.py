"""Four eyes on held withdrawals: the member who made one does not approve it while someone else may; the
approver confirms with their own authenticator code; a company of one keeps the owner's approval; the
payout policy's approval threshold needs one approver with 2FA."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pyotp
import pytest
from rest_framework.test import APIClient

from core.errors import Forbidden, ValidationFailed
from security.models import AuditEvent
from security.testing import mark_step_up_fresh
from security.totp import verify
from tests.chain import fund, send_payouts
from tests.dashboard import Dash, dashboard_rates, text  # noqa: F401 - fixtures
from tests.factories import (
    ApiTokenFactory,
    MemberFactory,
    PayoutPolicyFactory,
    TotpDeviceFactory,
    WithdrawalFactory,
)
from withdrawals.approvals import OwnWithdrawal, withdrawal_approve
from withdrawals.models import Withdrawal
from withdrawals.policy import LimitInput, payout_policy_set
from withdrawals.tests.conftest import ADDRESSES

pytestmark = pytest.mark.django_db

THRESHOLD = {"btc": {"approval_above": "0.001"}}


def _dash(user: Any) -> Dash:
    dash = Dash()
    dash.client.force_login(user)
    mark_step_up_fresh(dash.client)
    return dash


def _send(dash: Dash, amount: str = "0.002") -> Withdrawal:
    """A withdrawal made in the dashboard by `dash`'s member: the form, then its confirmation."""
    form = {"asset": "btc", "to": ADDRESSES["btc"], "amount": amount, "tag": ""}
    confirm = dash.post("/dashboard/withdrawals/new/", form)["Location"]
    assert dash.post(confirm).status_code == 303
    return Withdrawal.objects.latest("pk")


def _approve(dash: Dash, withdrawal: Withdrawal, code: str) -> Any:
    return dash.post(f"/dashboard/withdrawals/{withdrawal.uid}/approve/", {"code": code}, follow=True)


def _code(device: Any) -> str:
    return pyotp.TOTP(device.secret).now()


def _wrong(device: Any) -> str:
    return next(code for code in ("000000", "111111", "222222") if code != _code(device))


@pytest.fixture
def team(merchant):  # type: ignore[no-untyped-def]
    """A funded company whose owner and two finance members have authenticators; approvals above 0.001."""
    company = merchant.company
    fund(company, "btc", "0.1")
    owner_device = TotpDeviceFactory(user=company.owner)
    PayoutPolicyFactory(company=company, limits=THRESHOLD)
    maker = MemberFactory(company=company, role="finance", email="maker@acme.test").user
    checker = MemberFactory(company=company, role="finance", email="checker@acme.test").user
    return {
        "company": company,
        "owner": company.owner,
        "owner_device": owner_device,
        "maker": maker,
        "maker_device": TotpDeviceFactory(user=maker),
        "checker": checker,
        "checker_device": TotpDeviceFactory(user=checker),
    }


def test_a_dashboard_withdrawal_records_who_made_it_and_its_page_says_so(team):
    dash = _dash(team["maker"])

    withdrawal = _send(dash)

    assert withdrawal.requested_by == team["maker"] and withdrawal.approval_required
    page = text(_dash(team["checker"]).get(f"/dashboard/withdrawals/{withdrawal.uid}/"))
    assert re.search(r'data-testid="requested-by">maker@acme.test<', page)
    assert "Requested by maker@acme.test: an owner, admin or finance member other than" in page


def test_the_maker_is_refused_and_another_finance_member_approves_with_their_code(team):
    maker = _dash(team["maker"])
    withdrawal = _send(maker)

    refused = _approve(maker, withdrawal, _code(team["maker_device"]))
    assert send_payouts("btc") == []  # the maker's approval sent nothing: still held

    approved = _approve(_dash(team["checker"]), withdrawal, _code(team["checker_device"]))

    assert "You requested this withdrawal, so you cannot approve it" in text(refused)
    assert f"Withdrawal {withdrawal.uid} approved" in text(approved)
    [txid] = send_payouts("btc")  # and now it goes out
    withdrawal.refresh_from_db()
    assert withdrawal.approved_at is not None and withdrawal.txid == txid
    event = AuditEvent.objects.get(action="withdrawal.approve")
    assert event.user == team["checker"]
    assert event.detail == f"{withdrawal.uid}, requested by maker@acme.test"


def test_the_makers_code_is_not_spent_by_the_refusal(team):
    maker = _dash(team["maker"])
    withdrawal = _send(maker)
    code = _code(team["maker_device"])

    _approve(maker, withdrawal, code)

    assert verify(team["maker"], code)  # still unused: refused before any code was checked


def test_a_wrong_code_of_the_approver_is_refused(team):
    withdrawal = _send(_dash(team["maker"]))

    refused = _approve(_dash(team["checker"]), withdrawal, _wrong(team["checker_device"]))

    assert "That is not a current authenticator code." in text(refused)
    withdrawal.refresh_from_db()
    assert withdrawal.approved_at is None
    assert not AuditEvent.objects.filter(action="withdrawal.approve").exists()


def test_another_members_code_does_not_approve(team):
    withdrawal = _send(_dash(team["maker"]))

    refused = _approve(_dash(team["checker"]), withdrawal, _code(team["owner_device"]))

    assert "That is not a current authenticator code." in text(refused)
    assert Withdrawal.objects.get(pk=withdrawal.pk).approved_at is None


@pytest.mark.parametrize("role", ["viewer", "developer"])
def test_a_viewer_or_developer_cannot_approve(team, role):
    withdrawal = _send(_dash(team["maker"]))
    member = MemberFactory(company=team["company"], role=role).user
    device = TotpDeviceFactory(user=member)

    response = _dash(member).post(
        f"/dashboard/withdrawals/{withdrawal.uid}/approve/", {"code": _code(device)}
    )

    assert response.status_code == 403
    assert Withdrawal.objects.get(pk=withdrawal.pk).approved_at is None


def test_the_owner_and_an_admin_may_approve_a_finance_members_withdrawal(team):
    admin = MemberFactory(company=team["company"], role="admin").user
    admin_device = TotpDeviceFactory(user=admin)
    first, second = _send(_dash(team["maker"])), _send(_dash(team["maker"]))

    by_owner = _approve(_dash(team["owner"]), first, _code(team["owner_device"]))
    by_admin = _approve(_dash(admin), second, _code(admin_device))

    assert f"Withdrawal {first.uid} approved" in text(by_owner)
    assert f"Withdrawal {second.uid} approved" in text(by_admin)


def test_an_api_withdrawal_has_no_maker_and_any_approver_approves_it(team):
    withdrawal = WithdrawalFactory(company=team["company"], amount=Decimal("0.002"), funded=False)
    assert withdrawal.requested_by is None and withdrawal.approval_required
    page = text(_dash(team["maker"]).get(f"/dashboard/withdrawals/{withdrawal.uid}/"))
    assert "Requested through the API: any owner, admin or finance member approves it" in page

    approved = _approve(_dash(team["maker"]), withdrawal, _code(team["maker_device"]))

    assert f"Withdrawal {withdrawal.uid} approved" in text(approved)


def test_in_a_company_of_one_the_owner_approves_their_own_as_before(merchant):
    company = merchant.company
    fund(company, "btc", "0.1")
    device = TotpDeviceFactory(user=company.owner)
    PayoutPolicyFactory(company=company, limits=THRESHOLD)
    dash = _dash(company.owner)
    withdrawal = _send(dash)
    assert withdrawal.requested_by == company.owner

    approved = _approve(dash, withdrawal, _code(device))

    assert f"Withdrawal {withdrawal.uid} approved" in text(approved)
    assert Withdrawal.objects.get(pk=withdrawal.pk).approved_at is not None


def test_the_maker_approves_their_own_when_nobody_else_may(merchant):
    company = merchant.company
    fund(company, "btc", "0.1")
    TotpDeviceFactory(user=company.owner)
    PayoutPolicyFactory(company=company, limits=THRESHOLD)
    MemberFactory(company=company, role="viewer")
    withdrawal = _send(_dash(company.owner))

    approved = withdrawal_approve(company=company, uid=withdrawal.uid, approver=company.owner)

    assert approved.approved_at is not None


def test_the_service_refuses_the_maker_and_a_member_who_may_not_approve(team):
    withdrawal = _send(_dash(team["maker"]))
    viewer = MemberFactory(company=team["company"], role="viewer").user

    with pytest.raises(OwnWithdrawal):
        withdrawal_approve(company=team["company"], uid=withdrawal.uid, approver=team["maker"])
    with pytest.raises(Forbidden):
        withdrawal_approve(company=team["company"], uid=withdrawal.uid, approver=viewer)

    assert Withdrawal.objects.get(pk=withdrawal.pk).approved_at is None


def test_an_approval_threshold_needs_an_approver_with_2fa_not_necessarily_the_owner(merchant):
    company = merchant.company
    finance = MemberFactory(company=company, role="finance").user
    viewer = MemberFactory(company=company, role="viewer").user
    TotpDeviceFactory(user=viewer)  # cannot approve: does not count
    limits = {"btc": LimitInput(approval_above=Decimal("0.5"))}

    with pytest.raises(ValidationFailed) as refused:
        payout_policy_set(company=company, cooldown_hours=0, limits=limits)
    TotpDeviceFactory(user=finance)
    changes = payout_policy_set(company=company, cooldown_hours=0, limits=limits)

    assert refused.value.errors[0].code == "second_factor_required"
    assert changes == ["btc approval_above none -> 0.5"]


def test_a_withdrawal_made_with_a_members_token_names_that_member_who_then_cannot_approve_it(team):
    issued = ApiTokenFactory(company=team["company"], scopes=["withdrawals:write"], created_by=team["maker"])
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")

    response = api.post(
        "/api/transactions/withdraw",
        {"items": [{"asset": "btc", "amount": "0.002", "to": ADDRESSES["btc"]}]},
        format="json",
    )

    assert response.status_code == 200, response.content
    withdrawal = Withdrawal.objects.get(uid=response.json()[0]["uid"])
    assert withdrawal.requested_by == team["maker"] and withdrawal.approval_required
    refused = _approve(_dash(team["maker"]), withdrawal, _code(team["maker_device"]))
    assert "You requested this withdrawal, so you cannot approve it" in text(refused)

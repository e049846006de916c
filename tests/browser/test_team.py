"""The team in a real browser: an owner invites a finance member by e-mail, who opens the mailed link in
their own browser, signs up with a password and lands in the dashboard as finance; the owner demotes a
member to viewer (refused the withdrawal page at once) and removes them (logged out at their next
request); a withdrawal a finance member makes above the payout policy's approval threshold waits for
another member, its maker is refused, and the owner approves it with their own authenticator code.

Screenshots: test-artifacts/screenshots/team-{desktop,phone}-members.png (the team page, a member and an
open invitation) and team-{desktop,phone}-held.png (the held withdrawal, as the owner sees it).

The authenticators' clock is the test's (security.totp._now, shared with the live server's thread): each
log-in or approval uses the next 30-second step's code, without waiting for it.
"""

from __future__ import annotations

import re
from typing import cast

import pyotp
import pytest
from django.core import mail
from playwright.sync_api import expect

from payments.models import Company, Membership
from payments.services import MerchantCredentials
from security import totp
from security.models import AuditEvent
from tests.chain import fund
from tests.factories import PASSWORD as MEMBER_PASSWORD
from tests.factories import MemberFactory, MerchantFactory, PayoutPolicyFactory, TotpDeviceFactory
from withdrawals.models import PayoutDraft, Withdrawal

pytestmark = pytest.mark.django_db(transaction=True)

OWNER = "owner@team-roastery.test"
OWNER_PASSWORD = "a long team passphrase"
FINANCE = "finance@team-roastery.test"
FINANCE_PASSWORD = "another long passphrase for finance"
BTC = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _company() -> Company:
    """Team Roastery, its owner logging in with OWNER_PASSWORD."""
    credentials = MerchantFactory(name="Team Roastery", email=OWNER, password=OWNER_PASSWORD)
    return cast(MerchantCredentials, credentials).company


@pytest.fixture
def clock(monkeypatch):  # type: ignore[no-untyped-def]
    tick = _Clock(totp._now())
    monkeypatch.setattr(totp, "_now", tick)
    return tick


def _log_in(page, base: str, email: str, password: str, code: str = "") -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{base}/dashboard/login/")
    page.get_by_label("E-mail").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    if code:
        expect(page.get_by_role("heading", name="Enter your code")).to_be_visible()
        page.get_by_label("Authenticator code").fill(code)
        page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()


def _signed_in_as(page, viewport: str, open_page):  # type: ignore[no-untyped-def]
    """A page in `viewport` of a new browser context holding `page`'s session (its cookies)."""
    other = open_page(viewport)
    other.context.add_cookies(page.context.cookies())
    return other


def _picture(page, shot, viewport: str, step: str) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_load_state()  # the stylesheet too: a full-page shot measures the page first
    shot(page, "team", viewport, step)


def _forgive_status(open_page, status: int) -> None:  # type: ignore[no-untyped-def]
    """The browser logs a page answered with an error status as a console error: forgive one, expected."""
    logged = f"Failed to load resource: the server responded with a status of {status} "
    open_page.errors.remove(next(error for error in open_page.errors if error.startswith(logged)))


def _member_row(page, email: str):  # type: ignore[no-untyped-def]
    return page.get_by_test_id("member-row").filter(has_text=email)


def test_owner_invites_a_finance_member_who_signs_up_from_the_mailed_link(
    open_page, live_server, shot, settings
):
    settings.BASE_URL = live_server.url  # the mailed link points at this server
    _company()
    base = live_server.url
    owner = open_page("desktop")
    _log_in(owner, base, OWNER, OWNER_PASSWORD)

    # Invite by e-mail as finance: the invitation is listed, and its mail carries the one-time link.
    owner.get_by_role("link", name="Team").click()
    expect(owner.get_by_role("heading", name="Team", exact=True)).to_be_visible()
    owner.get_by_label("E-mail").fill(FINANCE)
    owner.get_by_label("Role", exact=True).select_option(label="Finance")
    owner.get_by_role("button", name="Send invitation").click()
    expect(owner.get_by_text(f"An invitation was sent to {FINANCE}")).to_be_visible()
    invitation = owner.get_by_test_id("invitation-row").filter(has_text=FINANCE)
    expect(invitation).to_contain_text("Finance")
    assert [message.to for message in mail.outbox] == [[FINANCE]]
    body = str(mail.outbox[0].body)
    link = re.search(r"https?://\S+/dashboard/invite/\S+/", body)
    assert link and link.group(0).startswith(base), body
    _picture(owner, shot, "desktop", "members")
    phone = _signed_in_as(owner, "phone", open_page)
    phone.goto(f"{base}/dashboard/team/")
    expect(phone.get_by_test_id("invitation-row")).to_contain_text(FINANCE)
    _picture(phone, shot, "phone", "members")

    # The invited person, in a browser of their own: the link names the company and the role; a password
    # twice (a mismatch first) signs them up and into the dashboard as finance.
    invited = open_page("phone")
    invited.goto(link.group(0))
    expect(invited.get_by_role("heading", name="Join Team Roastery")).to_be_visible()
    expect(invited.get_by_text("Finance", exact=True)).to_be_visible()
    invited.get_by_label("Password", exact=True).fill(FINANCE_PASSWORD)
    invited.get_by_label("Password again").fill("not the same passphrase")
    invited.get_by_role("button", name="Create account and join").click()
    expect(invited.get_by_text("The two passwords differ.")).to_be_visible()
    _forgive_status(open_page, 400)
    assert not Membership.objects.filter(user__email=FINANCE).exists()
    invited.get_by_label("Password", exact=True).fill(FINANCE_PASSWORD)
    invited.get_by_label("Password again").fill(FINANCE_PASSWORD)
    invited.get_by_role("button", name="Create account and join").click()
    expect(invited.get_by_role("heading", name="Overview")).to_be_visible()
    expect(invited.get_by_text("Welcome to Team Roastery.")).to_be_visible()
    expect(invited.locator(".nav__user")).to_contain_text(FINANCE)
    expect(invited.get_by_test_id("member-role")).to_have_text("Finance")
    expect(invited.get_by_role("link", name="Team")).to_have_count(0)  # not an owner's or admin's page

    # The link works once: opened again it answers a closed page.
    again = open_page("desktop")
    again.goto(link.group(0))
    expect(again.get_by_role("heading", name="This invitation no longer works")).to_be_visible()
    expect(again.get_by_test_id("invitation-closed")).to_contain_text("The invitation was used already.")
    _forgive_status(open_page, 410)
    expect(again.get_by_role("button", name="Create account and join")).to_have_count(0)

    # The owner's team page, reloaded: the new member with their role; no open invitation any more.
    owner.reload()
    row = _member_row(owner, FINANCE)
    expect(row).to_be_visible()
    expect(row.get_by_label(f"Role of {FINANCE}")).to_have_value("finance")
    expect(owner.get_by_test_id("invitation-row")).to_have_count(0)
    expect(owner.get_by_text("No open invitations.")).to_be_visible()
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"team.invite", "team.accept"} <= actions


def test_owner_demotes_a_member_to_viewer_then_removes_them(open_page, live_server, shot):
    company = _company()
    MemberFactory(company=company, role="finance", email=FINANCE)
    fund(company, "btc", "0.1")
    base = live_server.url
    member = open_page("desktop")
    _log_in(member, base, FINANCE, MEMBER_PASSWORD)
    member.goto(f"{base}/dashboard/withdrawals/new/")
    expect(member.get_by_role("button", name="Review withdrawal")).to_be_visible()
    owner = open_page("desktop")
    _log_in(owner, base, OWNER, OWNER_PASSWORD)

    # Finance -> viewer: the member's next page load is a viewer's, and the withdrawal form is refused.
    owner.goto(f"{base}/dashboard/team/")
    row = _member_row(owner, FINANCE)
    row.get_by_label(f"Role of {FINANCE}").select_option(label="Viewer")
    row.get_by_role("button", name="Change").click()
    expect(owner.get_by_text(f"{FINANCE} is now Viewer.")).to_be_visible()
    expect(_member_row(owner, FINANCE).get_by_label(f"Role of {FINANCE}")).to_have_value("viewer")

    member.reload()
    expect(member.get_by_role("heading", name="Not for your role")).to_be_visible()
    _forgive_status(open_page, 403)
    expect(member.get_by_role("button", name="Review withdrawal")).to_have_count(0)
    expect(member.get_by_test_id("member-role")).to_have_text("Viewer")
    expect(member.get_by_role("main")).to_contain_text("Your role in Team Roastery is Viewer")
    # The form posted anyway (with the page's CSRF token, as the old form would): refused, nothing drafted.
    csrf = member.locator("input[name=csrfmiddlewaretoken]").first.get_attribute("value") or ""
    form = {"csrfmiddlewaretoken": csrf, "asset": "btc", "to": BTC, "amount": "0.01"}
    answer = member.request.post(f"{base}/dashboard/withdrawals/new/", form=form, max_redirects=0)
    assert answer.status == 403 and "Not for your role" in answer.text()
    assert not PayoutDraft.objects.exists()
    member.get_by_role("link", name="Withdrawals").click()
    expect(member.get_by_role("heading", name="Withdrawals")).to_be_visible()

    # Removal: a confirmation page first; then the member's next request is the log-in page.
    owner.goto(f"{base}/dashboard/team/")
    _member_row(owner, FINANCE).get_by_role("link", name="Remove…").click()
    expect(owner.get_by_role("heading", name=f"Remove {FINANCE}")).to_be_visible()
    expect(owner.get_by_test_id("remove-member")).to_contain_text("(Viewer) leaves Team Roastery")
    assert Membership.objects.filter(user__email=FINANCE).exists()  # the page alone removes nobody
    owner.get_by_role("button", name=f"Remove {FINANCE}").click()
    expect(owner.get_by_text(f"{FINANCE} was removed and logged out.")).to_be_visible()
    expect(_member_row(owner, FINANCE)).to_have_count(0)
    assert not Membership.objects.filter(user__email=FINANCE).exists()

    member.reload()
    expect(member.get_by_role("heading", name="Log in to your dashboard")).to_be_visible()
    assert "/dashboard/login/" in member.url
    actions = list(AuditEvent.objects.filter(action__startswith="team.").values_list("action", flat=True))
    assert sorted(actions) == ["team.remove", "team.role"]


def test_a_withdrawal_over_the_threshold_waits_for_a_second_member_who_approves_it(
    open_page, live_server, shot, clock
):
    company = _company()
    owner_device = TotpDeviceFactory(user=company.owner)
    finance = cast(Membership, MemberFactory(company=company, role="finance", email=FINANCE))
    finance_device = TotpDeviceFactory(user=finance.user)
    PayoutPolicyFactory(company=company, limits={"btc": {"approval_above": "0.02"}})
    fund(company, "btc", "0.1")
    base = live_server.url

    def code(device) -> str:  # type: ignore[no-untyped-def]
        clock.now += totp.INTERVAL  # every code is the next step's: none is ever accepted twice
        return pyotp.TOTP(device.secret).at(clock())

    # The finance member makes a withdrawal above the threshold: sent, but held for an approval.
    maker = open_page("desktop")
    _log_in(maker, base, FINANCE, MEMBER_PASSWORD, code(finance_device))
    maker.goto(f"{base}/dashboard/withdrawals/new/")
    maker.get_by_label("Asset").select_option("btc")
    maker.get_by_label("To address").fill(BTC)
    maker.get_by_label("Amount").fill("0.05")
    maker.get_by_role("button", name="Review withdrawal").click()
    expect(maker.get_by_role("heading", name="Confirm and send")).to_be_visible()
    expect(maker.get_by_test_id("confirm-items")).to_contain_text("will be held")
    maker.get_by_label("Your password or authenticator code").fill(MEMBER_PASSWORD)
    maker.get_by_role("button", name="Send 1 withdrawal").click()
    expect(maker.get_by_test_id("sent")).to_be_visible()
    withdrawal = Withdrawal.objects.get()
    assert withdrawal.requested_by_id == finance.user_id and withdrawal.approved_at is None

    maker.get_by_role("link", name=withdrawal.uid).click()
    held = maker.get_by_test_id("hold-section")
    expect(held).to_contain_text(
        "It is above your approval threshold: it is sent once a member who may approve it does."
    )
    expect(maker.get_by_test_id("approval-who")).to_contain_text(
        "You requested it: another owner, admin or finance member approves it"
    )
    expect(maker.get_by_test_id("requested-by")).to_have_text(f"{FINANCE} (you)")

    # Its maker may not approve it, even with a good code (and the code is not spent).
    maker.get_by_test_id("approve-form").get_by_label("Authenticator code").fill(code(finance_device))
    maker.get_by_role("button", name="Approve").click()
    expect(maker.get_by_text("You requested this withdrawal, so you cannot approve it")).to_be_visible()
    expect(maker.get_by_test_id("hold-section")).to_be_visible()
    withdrawal.refresh_from_db()
    assert withdrawal.approved_at is None

    # The owner opens it (their own log-in, their own code): who asked, and the approve form.
    owner = open_page("desktop")
    _log_in(owner, base, OWNER, OWNER_PASSWORD, code(owner_device))
    owner.goto(f"{base}/dashboard/withdrawals/{withdrawal.uid}/")
    expect(owner.get_by_test_id("requested-by")).to_have_text(FINANCE)
    expect(owner.get_by_test_id("approval-who")).to_contain_text(f"Requested by {FINANCE}")
    expect(owner.get_by_test_id("hold")).to_contain_text("held")
    _picture(owner, shot, "desktop", "held")
    phone = _signed_in_as(owner, "phone", open_page)
    phone.goto(f"{base}/dashboard/withdrawals/{withdrawal.uid}/")
    expect(phone.get_by_test_id("approve-form")).to_be_visible()
    _picture(phone, shot, "phone", "held")

    # A wrong code is refused; the owner's current code approves it: no longer held, approved, sent next.
    owner.get_by_test_id("approve-form").get_by_label("Authenticator code").fill("000000")
    owner.get_by_role("button", name="Approve").click()
    expect(owner.get_by_text("That is not a current authenticator code.")).to_be_visible()
    owner.get_by_test_id("approve-form").get_by_label("Authenticator code").fill(code(owner_device))
    owner.get_by_role("button", name="Approve").click()
    expect(
        owner.get_by_text(f"Withdrawal {withdrawal.uid} approved: it is sent in a moment.")
    ).to_be_visible()
    expect(owner.get_by_test_id("hold-section")).to_have_count(0)
    expect(owner.locator(".kv")).to_contain_text("Approved")
    withdrawal.refresh_from_db()
    assert withdrawal.approved_at is not None
    audit = AuditEvent.objects.get(action="withdrawal.approve")
    assert audit.detail == f"{withdrawal.uid}, requested by {FINANCE}"

    # The maker's page, reloaded, shows it approved too.
    maker.reload()
    expect(maker.get_by_test_id("hold-section")).to_have_count(0)
    expect(maker.locator(".kv")).to_contain_text("Approved")

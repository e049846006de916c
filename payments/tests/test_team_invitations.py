"""Invitations and members through the dashboard: invite by mail, accept by signing up or logging in, the
link works once and expires, re-inviting replaces it; role changes and removals with their rules; every
change audited."""

# ruff: noqa: F811 - the fixtures imported from tests.dashboard are this module's test parameters

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from payments.members import invitation_create
from payments.models import Invitation, Membership
from security.models import AuditEvent
from tests.dashboard import Dash, dash, dashboard_rates, text  # noqa: F401 - fixtures
from tests.factories import PASSWORD, MemberFactory, UserFactory

pytestmark = pytest.mark.django_db

LINK = re.compile(r"http\S+/dashboard/invite/([^/\s]+)/")
NEW_PASSWORD = "a much longer pass phrase 42"


@pytest.fixture
def invite(dash, mailoutbox, django_capture_on_commit_callbacks):  # type: ignore[no-untyped-def]
    """Invite by the team page; the clear token of the link mailed (the mail leaves after commit)."""

    def run(email: str, role: str = "viewer") -> str:
        with django_capture_on_commit_callbacks(execute=True):
            response = dash.post("/dashboard/team/invite/", {"email": email, "role": role})
        assert response.status_code == 302, text(response)
        match = LINK.search(mailoutbox[-1].body)
        assert match, mailoutbox[-1].body
        return match.group(1)

    return run


def _actions(company) -> list[str]:  # type: ignore[no-untyped-def]
    return list(
        AuditEvent.objects.filter(company=company, action__startswith="team.")
        .order_by("pk")
        .values_list("action", flat=True)
    )


def test_invite_mails_a_link_and_signing_up_with_it_makes_a_logged_in_member(
    dash, merchant, mailoutbox, invite
):
    token = invite("new@shop.test", "finance")
    guest = Dash()

    page = guest.get(f"/dashboard/invite/{token}/")
    joined = guest.post(f"/dashboard/invite/{token}/", {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD})

    assert mailoutbox[0].to == ["new@shop.test"] and "Acme Shop" in mailoutbox[0].body
    assert page.status_code == 200 and "Finance" in text(page)
    assert joined.status_code == 302
    member = Membership.objects.get(user__email="new@shop.test")
    assert (member.company, member.role) == (merchant.company, "finance")
    assert guest.get("/dashboard/balances/").status_code == 200  # logged in
    stored = Invitation.objects.get()
    assert token not in stored.token_hash and stored.accepted_at is not None
    assert _actions(merchant.company) == ["team.invite", "team.accept"]
    assert all(token not in detail for detail in AuditEvent.objects.values_list("detail", flat=True))


def test_an_existing_user_without_a_company_accepts_by_logging_in(dash, merchant, mailoutbox, invite):
    UserFactory(email="known@shop.test")
    token = invite("known@shop.test", "developer")
    guest = Dash()

    anonymous = guest.get(f"/dashboard/invite/{token}/")
    guest.client.login(username="known@shop.test", password=PASSWORD)
    accepted = guest.post(f"/dashboard/invite/{token}/")

    assert "Log in as" in text(anonymous) and "known@shop.test" in text(anonymous)
    assert accepted.status_code == 302
    assert Membership.objects.get(user__email="known@shop.test").role == "developer"


def test_the_link_works_once(dash, merchant, mailoutbox, invite):
    token = invite("once@shop.test", "viewer")
    Dash().post(f"/dashboard/invite/{token}/", {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD})

    again = Dash().post(f"/dashboard/invite/{token}/", {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD})

    assert again.status_code == 410 and 'data-testid="invitation-closed"' in text(again)
    assert Membership.objects.filter(user__email="once@shop.test").count() == 1


def test_an_expired_link_shows_a_clear_page_and_does_nothing(merchant):
    issued = invitation_create(
        company=merchant.company,
        email="late@shop.test",
        role="viewer",
        invited_by=None,
        actor_role="owner",
        now=timezone.now() - timedelta(days=8),
    )

    response = Dash().post(
        f"/dashboard/invite/{issued.token}/", {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD}
    )

    assert response.status_code == 410 and "expired" in text(response)
    assert not Membership.objects.filter(user__email="late@shop.test").exists()


def test_reinviting_revokes_the_earlier_link(dash, merchant, mailoutbox, invite):
    first = invite("twice@shop.test", "viewer")
    second = invite("twice@shop.test", "finance")

    old = Dash().get(f"/dashboard/invite/{first}/")
    new = Dash().get(f"/dashboard/invite/{second}/")

    assert old.status_code == 410 and "revoked" in text(old)
    assert new.status_code == 200
    assert Invitation.objects.filter(revoked_at__isnull=True).count() == 1


def test_an_address_that_is_already_a_member_is_refused(dash, merchant, other_merchant, mailoutbox):
    response = dash.post("/dashboard/team/invite/", {"email": "owner@other.test", "role": "viewer"})

    assert response.status_code == 400 and "already a member" in text(response)
    assert mailoutbox == [] and not Invitation.objects.exists()


def test_revoking_an_invitation_kills_its_link(dash, merchant, mailoutbox, invite):
    token = invite("gone@shop.test", "viewer")
    invitation = Invitation.objects.get()

    dash.post(f"/dashboard/team/invitations/{invitation.pk}/revoke/")

    assert Dash().get(f"/dashboard/invite/{token}/").status_code == 410
    assert _actions(merchant.company) == ["team.invite", "team.invite.revoke"]


def test_mail_off_sends_nothing(dash, merchant, mailoutbox, settings):
    settings.EMAIL_ENABLED = False

    response = dash.post("/dashboard/team/invite/", {"email": "quiet@shop.test", "role": "viewer"})

    assert response.status_code == 302 and mailoutbox == []


def test_the_team_page_lists_members_and_open_invitations(dash, merchant, mailoutbox, invite):
    MemberFactory(company=merchant.company, role="finance", email="fin@shop.test")
    invite("pending@shop.test", "viewer")

    page = text(dash.get("/dashboard/team/"))

    assert "fin@shop.test" in page and "pending@shop.test" in page and "owner@acme.test" in page


def test_a_member_without_team_cannot_open_the_team_page(merchant):
    member = MemberFactory(company=merchant.company, role="developer")
    client = Dash()
    client.client.force_login(member.user)

    assert client.get("/dashboard/team/").status_code == 403
    assert 'href="/dashboard/team/"' not in text(client.get("/dashboard/balances/"))

"""Role changes and removals: at least one owner always remains, only an owner touches owners, a removed
member's session dies at once and their tokens stay listed; each change audited."""

from __future__ import annotations

import pytest

from payments.models import Membership
from security.models import AuditEvent
from security.testing import mark_step_up_fresh
from tests.dashboard import Dash, dash, dashboard_rates, text  # noqa: F401 - fixtures
from tests.factories import ApiTokenFactory, MemberFactory

pytestmark = pytest.mark.django_db


def _as(member: Membership, fresh: bool = True) -> Dash:
    client = Dash()
    client.client.force_login(member.user)
    if fresh:
        mark_step_up_fresh(client.client)
    return client


def _owner(merchant) -> Membership:  # type: ignore[no-untyped-def]
    return Membership.objects.get(company=merchant.company, role="owner")


def test_the_last_owner_cannot_be_demoted(merchant):
    owner = _owner(merchant)

    response = _as(owner).post(f"/dashboard/team/members/{owner.pk}/role/", {"role": "admin"}, follow=True)

    assert "last owner" in text(response)
    owner.refresh_from_db()
    assert owner.role == "owner"
    assert not AuditEvent.objects.filter(action="team.role").exists()


def test_the_last_owner_cannot_be_removed(merchant):
    owner = _owner(merchant)

    response = _as(owner).post(f"/dashboard/team/members/{owner.pk}/remove/", follow=True)

    assert "last owner" in text(response)
    assert Membership.objects.filter(pk=owner.pk).exists()


def test_an_admin_cannot_remove_or_demote_an_owner_nor_make_one(merchant):
    admin = MemberFactory(company=merchant.company, role="admin")
    viewer = MemberFactory(company=merchant.company, role="viewer")
    owner = _owner(merchant)
    client = _as(admin)

    removed = client.post(f"/dashboard/team/members/{owner.pk}/remove/", follow=True)
    demoted = client.post(f"/dashboard/team/members/{owner.pk}/role/", {"role": "viewer"}, follow=True)
    promoted = client.post(f"/dashboard/team/members/{viewer.pk}/role/", {"role": "owner"}, follow=True)

    assert all("Only an owner" in text(response) for response in (removed, demoted, promoted))
    assert Membership.objects.get(pk=owner.pk).role == "owner"
    assert Membership.objects.get(pk=viewer.pk).role == "viewer"


def test_an_owner_changes_a_role_and_it_is_audited(merchant):
    member = MemberFactory(company=merchant.company, role="viewer", email="v@shop.test")

    _as(_owner(merchant)).post(f"/dashboard/team/members/{member.pk}/role/", {"role": "finance"})

    member.refresh_from_db()
    assert member.role == "finance"
    event = AuditEvent.objects.get(action="team.role")
    assert "v@shop.test" in event.detail and "Viewer" in event.detail and "Finance" in event.detail


def test_changing_an_admin_needs_a_fresh_step_up(merchant):
    admin = MemberFactory(company=merchant.company, role="admin")

    response = _as(_owner(merchant), fresh=False).post(
        f"/dashboard/team/members/{admin.pk}/role/", {"role": "viewer"}
    )

    assert response.status_code == 200 and "security/security_step_up.html" in [
        t.name for t in response.templates
    ]
    assert Membership.objects.get(pk=admin.pk).role == "admin"


def test_a_removed_members_next_request_is_logged_out(merchant):
    member = MemberFactory(company=merchant.company, role="finance", email="leaving@shop.test")
    theirs = _as(member)
    assert theirs.get("/dashboard/balances/").status_code == 200

    _as(_owner(merchant)).post(f"/dashboard/team/members/{member.pk}/remove/")

    after = theirs.get("/dashboard/balances/")
    assert after.status_code == 302 and "/dashboard/login/" in after["Location"]
    assert not Membership.objects.filter(pk=member.pk).exists()
    assert "leaving@shop.test" in AuditEvent.objects.get(action="team.remove").detail


def test_the_removal_page_names_the_members_tokens_and_they_stay_active(merchant):
    member = MemberFactory(company=merchant.company, role="developer", email="dev@shop.test")
    token = ApiTokenFactory(company=merchant.company, created_by=member.user).token
    owner = _as(_owner(merchant))

    confirm = owner.get(f"/dashboard/team/members/{member.pk}/remove/")
    owner.post(f"/dashboard/team/members/{member.pk}/remove/")
    tokens_page = text(owner.get("/dashboard/settings/api/tokens/"))

    assert "1 token created by this member stays active: revoke it below" in text(confirm)
    token.refresh_from_db()
    assert token.revoked_at is None
    assert "created by dev@shop.test" in tokens_page

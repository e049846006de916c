"""/api/company/members and /api/company/invitations: list, invite, change a role, remove, revoke, with the
`team` scope; refused (403 problem+json) without it; the same rules and audit as the dashboard."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from payments.models import Invitation, Membership
from security.models import AuditEvent
from tests.factories import ApiTokenFactory, MemberFactory

pytestmark = pytest.mark.django_db

MEMBERS = "/api/company/members"


def _client(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


@pytest.fixture
def team_api(merchant):  # type: ignore[no-untyped-def]
    owner = merchant.company.members.get().user
    issued = ApiTokenFactory(company=merchant.company, scopes=["team"], created_by=owner)
    return _client(issued.secret)


def test_list_members(team_api, merchant):
    MemberFactory(company=merchant.company, role="finance", email="fin@shop.test")

    response = team_api.get(MEMBERS)

    assert response.status_code == 200
    assert [(row["email"], row["role"]) for row in response.json()["results"]] == [
        ("owner@acme.test", "owner"),
        ("fin@shop.test", "finance"),
    ]
    assert set(response.json()["results"][0]) == {"id", "email", "role", "createdAt", "invitedBy"}


def test_invite_answers_the_invitation_never_its_token(
    team_api, merchant, mailoutbox, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = team_api.post(MEMBERS, {"email": "New@Shop.test", "role": "developer"}, format="json")

    assert response.status_code == 201
    body = response.json()
    assert (
        body["email"] == "new@shop.test" and body["role"] == "developer" and "token" not in str(body).lower()
    )
    assert len(mailoutbox) == 1 and "/dashboard/invite/" in mailoutbox[0].body
    assert team_api.get("/api/company/invitations").json()["results"][0]["id"] == body["id"]
    assert AuditEvent.objects.filter(action="team.invite").count() == 1


def test_patch_and_delete_a_member(team_api, merchant):
    member = MemberFactory(company=merchant.company, role="viewer")

    patched = team_api.patch(f"{MEMBERS}/{member.pk}", {"role": "finance"}, format="json")
    deleted = team_api.delete(f"{MEMBERS}/{member.pk}")

    assert patched.status_code == 200 and patched.json()["role"] == "finance"
    assert deleted.status_code == 200
    assert not Membership.objects.filter(pk=member.pk).exists()
    assert list(
        AuditEvent.objects.filter(action__startswith="team.").order_by("pk").values_list("action", flat=True)
    ) == [
        "team.role",
        "team.remove",
    ]


def test_the_last_owner_cannot_be_removed_through_the_api(api, merchant):
    owner = merchant.company.members.get()

    response = api.delete(f"{MEMBERS}/{owner.pk}")

    assert response.status_code == 409
    assert response["Content-Type"].startswith("application/problem+json")
    assert response.json()["code"] == "last_owner"


def test_an_admins_token_cannot_touch_an_owner(merchant):
    admin = MemberFactory(company=merchant.company, role="admin")
    client = _client(ApiTokenFactory(company=merchant.company, scopes=["team"], created_by=admin.user).secret)
    owner = merchant.company.members.get(role="owner")

    response = client.patch(f"{MEMBERS}/{owner.pk}", {"role": "viewer"}, format="json")

    assert response.status_code == 403 and response.json()["code"] == "forbidden"
    assert Membership.objects.get(pk=owner.pk).role == "owner"


def test_without_the_team_scope_it_is_refused(merchant):
    client = _client(ApiTokenFactory(company=merchant.company, scopes=["invoices:read"]).secret)

    response = client.get(MEMBERS)

    assert response.status_code == 403
    assert response["Content-Type"].startswith("application/problem+json")
    assert "team" in response.json()["detail"]


def test_revoke_an_invitation(team_api):
    invitation = team_api.post(MEMBERS, {"email": "x@shop.test", "role": "viewer"}, format="json").json()

    response = team_api.delete(f"/api/company/invitations/{invitation['id']}")

    assert response.status_code == 200
    assert Invitation.objects.get().revoked_at is not None
    assert team_api.get("/api/company/invitations").json()["results"] == []


def test_a_bad_role_is_a_problem(team_api, merchant):
    member = MemberFactory(company=merchant.company, role="viewer")

    response = team_api.patch(f"{MEMBERS}/{member.pk}", {"role": "king"}, format="json")

    assert response.status_code == 400 and response.json()["errors"][0]["field"] == "role"

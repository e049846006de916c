"""API tokens made in the dashboard carry at most what the member's role allows
(payments.roles.token_scopes), and record who made them."""

# ruff: noqa: F811 - the fixtures imported from tests.dashboard are this module's test parameters

from __future__ import annotations

import pytest

from payments.models import ApiToken
from payments.roles import token_scopes
from security.testing import mark_step_up_fresh
from tests.dashboard import Dash, dash, dashboard_rates, text  # noqa: F401 - fixtures
from tests.factories import ApiTokenFactory, MemberFactory

pytestmark = pytest.mark.django_db

NEW = "/dashboard/settings/api/tokens/new/"


def _as(member) -> Dash:  # type: ignore[no-untyped-def]
    client = Dash()
    client.client.force_login(member.user)
    mark_step_up_fresh(client.client)
    return client


@pytest.mark.parametrize("scope", ["withdrawals:write", "team"])
def test_a_developer_cannot_give_a_token_what_their_role_lacks(merchant, scope):
    developer = MemberFactory(company=merchant.company, role="developer")

    response = _as(developer).post(NEW, {"name": "ci", "scopes": ["invoices:read", scope]})

    assert response.status_code == 200 and "may not give a token" in text(response)
    assert not ApiToken.objects.exists()


def test_a_developers_token_within_the_role_records_its_creator(merchant):
    developer = MemberFactory(company=merchant.company, role="developer", email="dev@shop.test")

    _as(developer).post(NEW, {"name": "ci", "scopes": ["invoices:read", "webhooks:read"]})

    token = ApiToken.objects.get()
    assert token.created_by == developer.user
    assert "created by dev@shop.test" in text(_as(developer).get("/dashboard/settings/api/tokens/"))


def test_an_owner_may_give_the_team_scope(merchant):
    owner = merchant.company.members.get()

    _as(owner).post(NEW, {"name": "people", "scopes": ["team"]})

    assert ApiToken.objects.get().scopes == ["team"]


def test_older_tokens_show_the_company_as_their_creator(dash, merchant):
    ApiTokenFactory(company=merchant.company)
    mark_step_up_fresh(dash.client)

    assert "created by the company" in text(dash.get("/dashboard/settings/api/tokens/"))


def test_the_team_scope_is_only_for_owners_and_admins():
    assert {
        role for role in ("owner", "admin", "finance", "developer", "viewer") if "team" in token_scopes(role)
    } == {
        "owner",
        "admin",
    }

"""Named API tokens outside the API: the dashboard page (list, create shown once, revoke, both behind a
fresh step-up and audited) and `manage.py create_token` / `revoke_token`."""

# ruff: noqa: F811 - the fixtures imported from test_dashboard_support are this module's test parameters

from __future__ import annotations

import html as html_lib
import json
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from payments.models import ApiToken
from payments.tokens import api_token_revoke
from security.models import AuditEvent
from security.testing import forget_step_up, mark_step_up_fresh
from tests.dashboard import (  # noqa: F401 - fixtures
    Dash,
    company_of,
    dash,
    dashboard_rates,
    text,
)
from tests.factories import PASSWORD, ApiTokenFactory

pytestmark = pytest.mark.django_db

PAGE = "/dashboard/settings/api/tokens/"
NEW = "/dashboard/settings/api/tokens/new/"
BALANCES = "/api/company/balances"
SECRET = re.compile(r'data-testid="api-token-secret">([^<]+)<')


def revoke_url(token: ApiToken) -> str:
    return f"/dashboard/settings/api/tokens/{token.pk}/revoke/"


def api_status(secret: str, path: str = BALANCES) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return int(client.get(path).status_code)


@pytest.fixture
def fresh(dash):  # type: ignore[no-untyped-def]
    mark_step_up_fresh(dash.client)
    return dash


# --- the page -------------------------------------------------------------------------------------------


def test_the_page_lists_the_company_token_and_the_named_ones_without_secrets(dash, merchant):
    live = ApiTokenFactory(
        company=merchant.company,
        name="shop backend",
        scopes=["invoices:read"],
        allowed_networks=["203.0.113.0/24"],
    )
    gone = ApiTokenFactory(company=merchant.company, name="old script", scopes=["balances:read"])
    api_token_revoke(company_id=merchant.company.pk, token_id=gone.token.pk)
    api_status(live.secret, "/api/invoices/v1/regular")  # sets "last used"

    page = text(dash.get(PAGE))

    assert company_of(merchant).token_prefix in page
    assert "shop backend" in page and live.token.token_prefix in page
    assert "invoices:read" in page and "203.0.113.0/24" in page
    assert "old script" in page and "revoked" in page
    assert live.secret not in page and gone.secret not in page and merchant.public_token not in page
    assert page.count("never") >= 1  # the revoked one was never used
    assert f'action="{revoke_url(live.token)}"' in page
    assert f'action="{revoke_url(gone.token)}"' not in page


def test_the_api_settings_page_links_to_the_tokens(dash):
    page = text(dash.get("/dashboard/settings/api/"))

    assert f'href="{PAGE}"' in page


def test_another_merchants_tokens_are_not_listed(dash, merchant, other_merchant):
    ApiTokenFactory(company=other_merchant.company, name="their token")

    assert "their token" not in text(dash.get(PAGE))


def test_a_visitor_who_is_not_logged_in_is_sent_to_log_in(merchant):
    response = Dash().get(PAGE)

    assert response.status_code == 302
    assert "/dashboard/login/" in response["Location"]


# --- create ---------------------------------------------------------------------------------------------


def test_creating_shows_the_token_once_and_it_works_with_its_scopes(fresh, merchant):
    response = fresh.post(
        NEW,
        {"name": "reports", "scopes": ["balances:read"], "allowed_networks": "127.0.0.1\n2001:db8::/48\n"},
    )

    assert response.status_code == 302 and response["Location"] == PAGE
    page = text(fresh.get(PAGE))
    secret = html_lib.unescape(SECRET.search(page).group(1))  # type: ignore[union-attr]
    token = ApiToken.objects.get(company=merchant.company, name="reports")
    assert secret.startswith("kassa_tk_") and token.token_prefix == secret[:13]
    assert token.scopes == ["balances:read"]
    assert token.allowed_networks == ["127.0.0.1/32", "2001:db8::/48"]
    assert api_status(secret) == 200
    assert api_status(secret, "/api/invoices/v1/regular") == 403
    assert secret not in text(fresh.get(PAGE))  # once only


def test_creating_is_audited_without_the_secret(fresh, merchant):
    fresh.post(NEW, {"name": "ci", "scopes": ["invoices:read", "invoices:write"]})

    event = AuditEvent.objects.get(company=merchant.company, action="token.create")
    token = ApiToken.objects.get(name="ci")
    assert "ci" in event.detail and token.token_prefix in event.detail and "invoices:write" in event.detail
    assert event.user_id == merchant.company.owner_id


def test_creating_without_a_fresh_step_up_asks_for_it_and_creates_nothing(dash, merchant):
    response = dash.post(NEW, {"name": "sneaky", "scopes": ["withdrawals:write"]})

    assert response.status_code == 200 and "Confirm it's you" in response.content.decode()
    assert not ApiToken.objects.exists()
    assert not AuditEvent.objects.filter(action="token.create").exists()


def test_confirmed_on_the_step_up_page_the_token_is_created_as_typed(dash, merchant):
    data = {"name": "reporting", "scopes": ["balances:read", "invoices:read"]}

    response = dash.post(NEW, {**data, "step_up-secret": PASSWORD}, follow=True)

    token = ApiToken.objects.get()
    assert (token.name, sorted(token.scopes)) == ("reporting", ["balances:read", "invoices:read"])
    assert "kassa_tk_" in response.content.decode()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "", "scopes": ["invoices:read"]}, "Give the token a name"),
        ({"name": "   ", "scopes": ["invoices:read"]}, "Give the token a name"),
        ({"name": "x" * 101, "scopes": ["invoices:read"]}, "At most 100 characters"),
        ({"name": "no scope"}, "Choose at least one scope"),
        ({"name": "bad scope", "scopes": ["admin"]}, "Select a valid choice"),
        (
            {"name": "bad net", "scopes": ["invoices:read"], "allowed_networks": "10.0.0.300"},
            "not an IPv4 or IPv6",
        ),
        (
            {"name": "host bits", "scopes": ["invoices:read"], "allowed_networks": "203.0.113.7/24"},
            "write 203.0.113.0/24 for the network",
        ),
    ],
)
def test_a_wrong_form_shows_the_error_and_creates_nothing(fresh, merchant, data, message):
    response = fresh.post(NEW, data)

    assert response.status_code == 200
    assert message in html_lib.unescape(text(response))
    assert not ApiToken.objects.exists()
    assert not AuditEvent.objects.filter(action="token.create").exists()


def test_a_second_live_token_with_the_same_name_is_refused(fresh, merchant):
    ApiTokenFactory(company=merchant.company, name="ci")

    response = fresh.post(NEW, {"name": "ci", "scopes": ["invoices:read"]})

    assert "already named" in html_lib.unescape(text(response))
    assert ApiToken.objects.filter(name="ci").count() == 1


# --- revoke ---------------------------------------------------------------------------------------------


def test_revoking_stops_the_token_at_once_and_is_audited(fresh, merchant):
    issued = ApiTokenFactory(company=merchant.company, name="old", scopes=["balances:read"])
    assert api_status(issued.secret) == 200

    response = fresh.post(revoke_url(issued.token))

    assert response.status_code == 302
    assert api_status(issued.secret) == 401
    event = AuditEvent.objects.get(action="token.revoke")
    assert "old" in event.detail and issued.secret not in event.detail


def test_revoking_twice_records_it_once(fresh, merchant):
    issued = ApiTokenFactory(company=merchant.company)

    fresh.post(revoke_url(issued.token))
    fresh.post(revoke_url(issued.token))

    assert AuditEvent.objects.filter(action="token.revoke").count() == 1


def test_revoking_without_a_fresh_step_up_changes_nothing(fresh, merchant):
    issued = ApiTokenFactory(company=merchant.company, scopes=["balances:read"])
    forget_step_up(fresh.client)

    response = fresh.post(revoke_url(issued.token))

    assert response.status_code == 200 and "Confirm it's you" in response.content.decode()
    assert api_status(issued.secret) == 200


def test_another_merchants_token_cannot_be_revoked(fresh, merchant, other_merchant):
    theirs = ApiTokenFactory(company=other_merchant.company, scopes=["balances:read"])

    response = fresh.post(revoke_url(theirs.token))

    assert response.status_code == 404
    assert api_status(theirs.secret) == 200


@pytest.mark.parametrize("token_id", ["0", "99999999999999999999999"])
def test_revoking_a_token_id_out_of_range_is_404(fresh, merchant, token_id):
    response = fresh.post(f"/dashboard/settings/api/tokens/{token_id}/revoke/")

    assert response.status_code == 404


def test_revoke_token_with_an_id_out_of_range_is_a_clear_error(merchant):
    with pytest.raises(CommandError, match="no live token"):
        run("revoke_token", "--email", "owner@acme.test", "--id", "99999999999999999999999")


def test_revoking_by_get_is_refused(fresh, merchant):
    issued = ApiTokenFactory(company=merchant.company, scopes=["balances:read"])

    response = fresh.get(revoke_url(issued.token))

    assert response.status_code == 405
    assert api_status(issued.secret) == 200


def test_a_post_without_csrf_is_refused(fresh, merchant):
    response = fresh.raw_post(NEW, {"name": "csrf", "scopes": ["invoices:read"]})

    assert response.status_code == 403
    assert not ApiToken.objects.exists()


# --- manage.py create_token / revoke_token --------------------------------------------------------------


def run(command: str, *args: str) -> str:
    out = StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


def test_create_token_prints_json_with_a_working_token(merchant):
    output = run(
        "create_token",
        "--email",
        "OWNER@acme.test",
        "--name",
        "deploy",
        "--scope",
        "balances:read",
        "--scope",
        "invoices:read",
        "--allow-ip",
        "127.0.0.0/8",
        "--allow-ip",
        "::1",
        "--json",
    )

    result = json.loads(output)
    assert result["token"].startswith("kassa_tk_")
    assert result["name"] == "deploy"
    assert result["scopes"] == ["invoices:read", "balances:read"]  # the documented order
    assert result["allowedNetworks"] == ["127.0.0.0/8", "::1/128"]
    assert result["prefix"] == result["token"][:13]
    assert api_status(result["token"]) == 200
    event = AuditEvent.objects.get(action="token.create")
    assert event.company_id == merchant.company.pk and event.ip is None
    assert result["token"] not in event.detail


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--email", "nobody@acme.test", "--name", "x", "--scope", "invoices:read"], "No company matches"),
        (["--email", "owner@acme.test", "--name", "x", "--scope", "invoices:admin"], "Unknown scope"),
        (["--email", "owner@acme.test", "--name", "x"], "Choose at least one scope"),
        (["--email", "owner@acme.test", "--name", " ", "--scope", "invoices:read"], "Give the token a name"),
        (
            [
                "--email",
                "owner@acme.test",
                "--name",
                "x",
                "--scope",
                "invoices:read",
                "--allow-ip",
                "10.0.0.0/33",
            ],
            "not an IPv4 or IPv6",
        ),
    ],
)
def test_create_token_refuses_bad_input_with_a_clear_error(merchant, args, message):
    with pytest.raises(CommandError, match=message):
        run("create_token", *args)

    assert not ApiToken.objects.exists()
    assert not AuditEvent.objects.filter(action="token.create").exists()


def test_create_token_without_json_says_it_is_shown_once(merchant):
    output = run("create_token", "--email", "owner@acme.test", "--name", "x", "--scope", "sandbox")

    assert "token: kassa_tk_" in output and "shown only now" in output


def test_revoke_token_by_name(merchant):
    issued = ApiTokenFactory(company=merchant.company, name="deploy", scopes=["balances:read"])

    output = run("revoke_token", "--email", "owner@acme.test", "--name", "deploy", "--json")

    assert json.loads(output) == {"id": issued.token.pk, "name": "deploy", "revoked": True}
    assert api_status(issued.secret) == 401
    assert AuditEvent.objects.filter(action="token.revoke", company=merchant.company).count() == 1


def test_revoke_token_of_an_unknown_name_is_a_clear_error(merchant, other_merchant):
    ApiTokenFactory(company=other_merchant.company, name="theirs")

    with pytest.raises(CommandError, match="no live token 'theirs'"):
        run("revoke_token", "--email", "owner@acme.test", "--name", "theirs")

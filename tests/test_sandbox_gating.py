"""The sandbox chain never reaches production silently: with SANDBOX_ENABLED off its codes are not offered
and its endpoints do not exist; with it on, webhooks of sandbox payments say so."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from chains.base import ChainTransfer
from chains.sandbox import SandboxBackend
from core.offer import offered_assets, offered_codes
from invoices.models import Invoice
from payments.models import LedgerEntry, SandboxTransaction
from tests.chain import fund
from tests.factories import WithdrawalFactory
from webhooks.models import WebhookEvent
from withdrawals.models import Withdrawal
from withdrawals.tests.conftest import ADDRESSES

pytestmark = pytest.mark.django_db

INVOICES = "/api/invoices/v1/regular"
REAL = "tests.test_sandbox_gating.RealChainDouble"


class RealChainDouble(SandboxBackend):
    """Stands in for a real chain backend (a node): it serves its code, sends nothing in these tests."""

    name = "real-double"

    def poll(self, code: str) -> list[ChainTransfer]:
        return []

    def send(self, code: str, *, reference: str, to: str, tag: str, amount: Decimal) -> str:
        raise AssertionError("no payout in these tests")

    def status(self, code: str, txid: str) -> int | str:
        return 0

    def explorer_url(self, code: str, txid: str) -> str:
        return f"https://explorer.invalid/{txid}"


@pytest.fixture
def production_like(settings):
    """SANDBOX_ENABLED off, ltc on a real backend, every other code on the (now disabled) sandbox."""
    settings.SANDBOX_ENABLED = False
    settings.CHAIN_BACKENDS = {"ltc": REAL}
    return settings


def _invoice(api, **extra) -> dict:
    response = api.post(
        INVOICES, {"invoiceCurrency": "usd", "items": [{"name": "A", "price": "10"}], **extra}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()


def _problem(response, status: int) -> dict:
    assert response.status_code == status, response.content[:400]
    assert response["Content-Type"].startswith("application/problem+json")
    return json.loads(response.content)


def test_mixed_deployment_offers_only_real_backends(production_like, api):
    invoice = _invoice(api)

    assert offered_codes() == ["ltc"]
    allowed = [entry["asset"] for entry in invoice["company"]["assets"] if entry["isAllowed"]]
    assert allowed == ["ltc"]


def test_what_is_offered_follows_the_settings_as_they_change(settings, api):
    """`offered_assets` is worked out once per settings: each of the three it depends on starts it over."""
    everything = offered_codes()
    assert "ltc" in everything and "btc" in everything

    settings.SANDBOX_ENABLED = False
    assert offered_codes() == []
    settings.CHAIN_BACKENDS = {"ltc": REAL}
    assert offered_codes() == ["ltc"]
    assert [entry["asset"] for entry in _invoice(api)["company"]["assets"] if entry["isAllowed"]] == ["ltc"]
    settings.ASSET_OVERRIDES = {"ltc": {"min_withdrawal": "0.5"}}
    assert [asset.min_withdrawal for asset in offered_assets()] == [Decimal("0.5")]
    settings.SANDBOX_ENABLED = True
    assert offered_codes() == everything


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/api/sandbox/deposits", {"address": ADDRESSES["btc"], "asset": "btc", "amount": "1"}),
        ("post", "/api/sandbox/blocks", {"count": 1}),
        ("post", "/api/sandbox/invoices/00000000-0000-4000-8000-000000000000/expire", {}),
        ("post", "/api/sandbox/withdrawals/001-1/reject", {}),
    ],
)
def test_sandbox_api_is_404_when_sandbox_disabled(production_like, api, anon, method, path, body):
    authenticated = getattr(api, method)(path, body, format="json")
    anonymous = getattr(anon, method)(path, body, format="json")

    assert _problem(authenticated, 404)["code"] == "not_found"
    assert _problem(anonymous, 404)["code"] == "not_found"
    assert SandboxTransaction.objects.count() == 0


def test_sandbox_explorer_page_is_404_when_sandbox_disabled(production_like):
    assert Client().get(f"/sandbox/tx/{'ab' * 32}").status_code == 404


def test_invoice_refuses_payment_code_not_offered(production_like, api, anon):
    refused = api.post(
        INVOICES,
        {"invoiceCurrency": "usd", "items": [{"name": "A", "price": "10"}], "paymentCurrency": "btc"},
        format="json",
    )
    invoice = _invoice(api)
    proceed_btc = anon.post(
        f"{INVOICES}/{invoice['id']}/proceed",
        {"clientEmail": "a@b.co", "paymentCurrency": "btc"},
        format="json",
    )
    proceed_ltc = anon.post(
        f"{INVOICES}/{invoice['id']}/proceed",
        {"clientEmail": "a@b.co", "paymentCurrency": "ltc"},
        format="json",
    )

    assert _problem(refused, 400)["code"] == "unsupported_asset"
    assert _problem(proceed_btc, 400)["code"] == "unsupported_asset"
    assert proceed_ltc.status_code == 200, proceed_ltc.content
    assert proceed_ltc.json()["address"]["asset"] == "ltc"


def test_withdrawal_refuses_code_not_offered(production_like, api, merchant):
    fund(merchant.company, "btc", "1")

    response = api.post(
        "/api/transactions/withdraw",
        {"items": [{"asset": "btc", "to": ADDRESSES["btc"], "amount": "0.01"}]},
        format="json",
    )
    rules = api.patch(
        "/api/company/auto-withdrawals",
        {"assets": {"btc": {"amount": "0.1", "isEnabled": True, "withdrawalAddress": ADDRESSES["btc"]}}},
        format="json",
    )

    assert _problem(response, 400)["code"] == "unsupported_asset"
    assert _problem(rules, 400)["code"] == "unsupported_asset"
    assert Withdrawal.objects.count() == 0


def test_static_deposit_refuses_code_not_offered(production_like, api):
    refused = api.post(
        "/api/addresses/v1/static-deposits",
        {"internal_user_id": "u1", "asset": "btc", "network": "btc"},
        format="json",
    )
    offered = api.post(
        "/api/addresses/v1/static-deposits",
        {"internal_user_id": "u1", "asset": "ltc", "network": "ltc"},
        format="json",
    )

    assert _problem(refused, 400)["code"] == "unsupported_asset"
    assert offered.status_code == 201, offered.content


def test_pay_page_hides_codes_not_offered(production_like, api):
    invoice = _invoice(api)

    html = Client().get(f"/{invoice['id']}").content.decode()

    assert 'value="ltc"' in html
    assert 'value="btc"' not in html and 'value="trc20usdt"' not in html
    assert "badge--sandbox" not in html


def test_pay_page_simulator_is_404_when_sandbox_disabled(settings, api, anon):
    invoice = _invoice(api, paymentCurrency="btc")
    anon.post(f"{INVOICES}/{invoice['id']}/proceed", {"clientEmail": "a@b.co"}, format="json")
    settings.SANDBOX_ENABLED = False

    page = Client().get(f"/{invoice['id']}").content.decode()
    pressed = Client().post(f"/{invoice['id']}/sandbox/pay-exact")

    assert pressed.status_code == 404
    assert "/sandbox/pay-exact" not in page
    assert SandboxTransaction.objects.count() == 0


def test_anonymous_client_cannot_pay_through_simulator_in_production_config(production_like, api, merchant):
    invoice = _invoice(api)
    client = Client()
    client.post(f"/{invoice['id']}", {"email": "client@example.com", "asset": "ltc"})
    assert Invoice.objects.get(pk=invoice["id"]).status == Invoice.Status.PENDING

    # As a script would send it (no CSRF token) and as the page would (CSRF checks off): 404 both ways.
    anonymous = Client(enforce_csrf_checks=True)
    for action in ("pay-exact", "pay-more", "mine"):
        assert anonymous.post(f"/{invoice['id']}/sandbox/{action}").status_code == 404
        assert client.post(f"/{invoice['id']}/sandbox/{action}").status_code == 404

    assert Invoice.objects.get(pk=invoice["id"]).status == Invoice.Status.PENDING
    assert not LedgerEntry.objects.filter(account__company=merchant.company).exists()


def test_dashboard_sandbox_is_404_when_sandbox_disabled(production_like, merchant):
    client = Client()
    client.force_login(get_user_model().objects.get(email="owner@acme.test"))

    panel = client.get("/dashboard/sandbox/")
    deposit = client.post(
        "/dashboard/sandbox/deposit/", {"address": ADDRESSES["btc"], "asset": "btc", "amount": "1"}
    )
    home = client.get("/dashboard/").content.decode()

    assert panel.status_code == 404 and deposit.status_code == 404
    assert "/dashboard/sandbox/" not in home


def test_sandbox_command_refuses_when_sandbox_disabled(production_like):
    with pytest.raises(CommandError, match="not enabled"):
        call_command("sandbox", "mine")


def _bodies(family: str) -> list[dict]:
    return [
        json.loads(event.body) for event in WebhookEvent.objects.filter(family=family).order_by("created_at")
    ]


def test_webhook_of_sandbox_payment_says_sandbox(api, anon, merchant):
    invoice = _invoice(api, paymentCurrency="btc")
    anon.post(f"{INVOICES}/{invoice['id']}/proceed", {"clientEmail": "a@b.co"}, format="json")
    fund(merchant.company, "btc", "1")
    api.post(
        "/api/transactions/withdraw",
        {"items": [{"asset": "btc", "to": ADDRESSES["btc"], "amount": "0.01"}]},
        format="json",
    )

    invoice_bodies = _bodies("invoice")
    withdrawal_bodies = _bodies("withdrawal")

    assert invoice_bodies and all(body["sandbox"] is True for body in invoice_bodies)
    assert list(invoice_bodies[0])[-1] == "sandbox"  # after the documented keys
    assert withdrawal_bodies and all(body["sandbox"] is True for body in withdrawal_bodies)


def test_webhook_of_real_payment_has_no_sandbox_key(production_like, api, anon):
    invoice = _invoice(api, paymentCurrency="ltc")
    anon.post(f"{INVOICES}/{invoice['id']}/proceed", {"clientEmail": "a@b.co"}, format="json")

    bodies = _bodies("invoice")

    assert bodies and all("sandbox" not in body for body in bodies)


@pytest.mark.parametrize(
    "page",
    [
        "/dashboard/withdrawals/new/",
        "/dashboard/withdrawals/rules/",
        "/dashboard/addresses/",
        "/dashboard/settings/payments/",
        "/dashboard/balances/",
    ],
)
def test_dashboard_pages_show_only_offered_codes(production_like, merchant, page):
    client = Client()
    client.force_login(get_user_model().objects.get(email="owner@acme.test"))

    response = client.get(page)

    html = response.content.decode()
    assert response.status_code == 200, page
    assert "ltc" in html
    for hidden in ("trc20usdt", "usdterc20", "bch"):
        assert hidden not in html, (page, hidden)


def test_saving_payment_settings_keeps_the_choice_for_assets_not_offered(production_like, merchant):
    from payments.models import Company

    client = Client()
    client.force_login(get_user_model().objects.get(email="owner@acme.test"))

    response = client.post(
        "/dashboard/settings/payments/",
        {"allowed_assets": ["ltc"], "default_fee_payer": "buyer", "redirect_url": ""},
    )
    refused = client.post(
        "/dashboard/settings/payments/",
        {"allowed_assets": ["ltc", "btc"], "default_fee_payer": "buyer", "redirect_url": ""},
    )

    assert response.status_code == 302
    allowed = Company.objects.get(pk=merchant.company.pk).allowed_assets
    assert "ltc" in allowed and "btc" in allowed  # btc is not shown here, and stays as the merchant had it
    assert refused.status_code == 200  # btc is not a choice on this deployment


def _answers(api, anon, invoice_id: str, withdrawal_uid: str, network: str) -> dict[str, dict]:
    """Every API answer about the objects the money touched: the invoice as read by anyone, by the merchant
    and in the list; the static deposit address; the withdrawal as read and in the list."""
    static = api.post(
        "/api/addresses/v1/static-deposits",
        {"internal_user_id": "u1", "asset": network, "network": network},
        format="json",
    )
    assert static.status_code == 201, static.content
    return {
        "invoice, public": anon.get(f"{INVOICES}/{invoice_id}").json(),
        "invoice, merchant": api.get(f"{INVOICES}/{invoice_id}").json(),
        "invoice, list": api.get(INVOICES).json()["results"][0],
        "static deposit": static.json(),
        "withdrawal": api.get(f"/api/transactions/withdrawals/{withdrawal_uid}").json(),
        "withdrawal, list": api.get("/api/transactions/withdrawals").json()["results"][0],
    }


def test_api_answers_of_sandbox_money_say_sandbox_as_the_webhooks_do(api, anon, merchant):
    """A shop trusting `status: done` on the API alone shipped for simulated money: every answer says so."""
    invoice = _invoice(api, paymentCurrency="btc")
    filled = anon.post(f"{INVOICES}/{invoice['id']}/proceed", {"clientEmail": "a@b.co"}, format="json")
    withdrawal = WithdrawalFactory(company=merchant.company, asset="btc")

    answers = _answers(api, anon, invoice["id"], withdrawal.uid, "btc")

    assert invoice["sandbox"] is True  # the merchant fixed a sandbox code at creation
    assert filled.json()["sandbox"] is True
    assert {name: body["sandbox"] for name, body in answers.items()} == dict.fromkeys(answers, True)
    assert all(list(body)[-1] == "sandbox" for body in answers.values())  # after the documented keys
    assert all(body["sandbox"] is True for body in _bodies("invoice") + _bodies("withdrawal"))


def test_api_answers_of_real_money_say_sandbox_false(production_like, api, anon, merchant):
    invoice = _invoice(api, paymentCurrency="ltc")
    anon.post(f"{INVOICES}/{invoice['id']}/proceed", {"clientEmail": "a@b.co"}, format="json")
    withdrawal = WithdrawalFactory(company=merchant.company, asset="ltc", amount=Decimal("0.05"))

    answers = _answers(api, anon, invoice["id"], withdrawal.uid, "ltc")

    assert {name: body["sandbox"] for name, body in answers.items()} == dict.fromkeys(answers, False)
    assert all("sandbox" not in body for body in _bodies("invoice") + _bodies("withdrawal"))

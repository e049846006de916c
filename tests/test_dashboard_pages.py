"""Every dashboard page renders for a merchant, is closed to strangers, and every form posts with CSRF."""

# ruff: noqa: F811 - the fixtures imported from test_dashboard_support are this module's test parameters

from __future__ import annotations

import re

import pytest

from security.testing import mark_step_up_fresh
from tests.dashboard import (  # noqa: F401 - fixtures
    CSRF_INPUT,
    anon_dash,
    dash,
    dashboard_rates,
    text,
)
from tests.factories import InvoiceFactory, WithdrawalFactory
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db

PAGES = [
    "/dashboard/",
    "/dashboard/welcome/",  # without a new token: redirects to the API settings
    "/dashboard/settings/api/",
    "/dashboard/settings/payments/",
    "/dashboard/balances/",
    "/dashboard/balances/btc/",
    "/dashboard/invoices/",
    "/dashboard/invoices/new/",
    "/dashboard/webhooks/",
    "/dashboard/addresses/",
    "/dashboard/claims/",
    "/dashboard/sandbox/",
    "/dashboard/withdrawals/",
    "/dashboard/withdrawals/new/",
    "/dashboard/withdrawals/bulk/",
    "/dashboard/withdrawals/rules/",
    "/dashboard/security/",
    "/dashboard/security/2fa/",  # enrolment (a fresh step-up, below)
    "/dashboard/security/audit/",
]
OBJECT_PAGES = [
    "/dashboard/invoices/{invoice}/",
    "/dashboard/webhooks/{event}/",
    "/dashboard/withdrawals/{withdrawal}/",
]
# A merchant page's navigation links to the merchant's pages (an operator without a company sees none).
MERCHANT_NAV = 'href="/dashboard/invoices/"'
PUBLIC_PAGES = [
    "/dashboard/login/",
    "/dashboard/signup/",
    "/dashboard/password-reset/",
    "/dashboard/password-reset/sent/",
    "/dashboard/password-reset/complete/",
]
POSTS = [
    "/dashboard/logout/",
    "/dashboard/settings/api/token/rotate/",
    "/dashboard/settings/api/secret/reveal/",
    "/dashboard/settings/api/secret/rotate/",
    "/dashboard/settings/api/secret/",
    "/dashboard/settings/api/webhook/",
    "/dashboard/settings/api/webhook/test/",
    "/dashboard/settings/payments/",
    "/dashboard/settings/payments/underpayment/",
    "/dashboard/invoices/new/",
    "/dashboard/invoices/{invoice}/accept/",
    "/dashboard/invoices/{invoice}/refund/",
    "/dashboard/webhooks/{event}/redeliver/",
    "/dashboard/addresses/",
    "/dashboard/sandbox/deposit/",
    "/dashboard/sandbox/mine/",
    "/dashboard/withdrawals/new/",
    "/dashboard/withdrawals/bulk/",
    "/dashboard/withdrawals/rules/",
    "/dashboard/confirm/",
    "/dashboard/security/2fa/",
    "/dashboard/security/2fa/disable/",
    "/dashboard/security/recovery-codes/new/",
]


@pytest.fixture(autouse=True)
def _stepped_up(request):  # type: ignore[no-untyped-def]
    """Forms behind a step-up (security.stepup) are reached with a fresh one: the garbage must get to them."""
    if "dash" in request.fixturenames:
        mark_step_up_fresh(request.getfixturevalue("dash").client)


@pytest.fixture
def objects(merchant):  # type: ignore[no-untyped-def]
    invoice = InvoiceFactory(company=merchant.company, code="btc")
    event = WebhookEvent.objects.filter(company=merchant.company).first()
    assert event is not None
    withdrawal = WithdrawalFactory(company=merchant.company)
    return {"invoice": invoice.pk, "event": event.pk, "withdrawal": withdrawal.uid}


@pytest.mark.parametrize("path", PAGES)
def test_every_page_renders_for_the_merchant(dash, path):
    response = dash.get(path, follow=True)

    assert response.status_code == 200
    assert "Acme Shop" in text(response)
    assert MERCHANT_NAV in response.content.decode()  # the navigation shows a merchant its pages
    assert response.redirect_chain == ([] if "welcome" not in path else [("/dashboard/settings/api/", 302)])


@pytest.mark.parametrize("path", OBJECT_PAGES)
def test_every_detail_page_renders_for_its_owner(dash, objects, path):
    response = dash.get(path.format(**objects))

    assert response.status_code == 200
    assert MERCHANT_NAV in response.content.decode()


@pytest.mark.parametrize("path", PAGES + OBJECT_PAGES)
def test_pages_send_strangers_to_the_login(anon_dash, objects, path):
    response = anon_dash.get(path.format(**objects))

    assert response.status_code == 302
    assert response["Location"].startswith("/dashboard/login/?next=")


@pytest.mark.parametrize("path", PAGES)
def test_dashboard_pages_are_never_cached(dash, path):
    response = dash.get(path)

    assert "no-store" in response.get("Cache-Control", "") or response.status_code == 302


@pytest.mark.parametrize("path", PUBLIC_PAGES)
def test_account_pages_render_for_visitors(anon_dash, path):
    response = anon_dash.get(path)

    assert response.status_code == 200
    assert "Kassa" in text(response)


@pytest.mark.parametrize("path", POSTS)
def test_every_form_post_without_the_csrf_token_is_refused(dash, objects, path):
    before = (WebhookEvent.objects.count(), dash.client.session.get("_auth_user_id"))

    response = dash.raw_post(path.format(**objects), {"url": "", "password": "x"})

    assert response.status_code == 403
    assert (WebhookEvent.objects.count(), dash.client.session.get("_auth_user_id")) == before


@pytest.mark.parametrize("path", PAGES + OBJECT_PAGES)
def test_every_form_on_a_page_carries_a_csrf_token(dash, objects, path):
    html = text(dash.get(path.format(**objects), follow=True))

    post_forms = re.findall(r'<form[^>]*method="post".*?</form>', html, flags=re.S)
    assert all(CSRF_INPUT.search(form) for form in post_forms)


@pytest.mark.parametrize("path", [p for p in POSTS if "{" not in p and "logout" not in p])
def test_get_on_an_action_url_is_not_allowed(dash, path):
    response = dash.get(path)

    # Pages that are also forms (invoices/new, addresses, payments) render; pure actions answer 405.
    assert response.status_code in (200, 405)


def test_the_navigation_links_every_section(dash):
    html = text(dash.get("/dashboard/"))

    for path in [
        "/dashboard/invoices/",
        "/dashboard/balances/",
        "/dashboard/addresses/",
        "/dashboard/webhooks/",
        "/dashboard/withdrawals/",
    ]:
        assert f'href="{path}"' in html
    assert 'href="/dashboard/settings/api/"' in html
    assert 'href="/dashboard/sandbox/"' in html
    assert 'aria-current="page"' in html


GARBAGE = {
    "url": "\x00" * 10 + "é" * 3000,
    "secret": "\u202e" * 200,
    "password": "x" * 5000,
    "allowed_assets": ["btc", "\x00", "<script>"],
    "default_fee_payer": ["buyer", "merchant"],
    "redirect_url": "http://[::1",
    "invoice_currency": "usd\x00",
    "fee_payer": "",
    "payment_currency": "btc' OR 1=1 --",
    "item_name": ["a" * 600, "", "b"],
    "item_price": ["1e999999", "-0", "0x10", "١٢٣"],
    "address": "\n".join(["bc1q"] * 50),
    "tag": "t" * 100,
    "amount": "99999999999999999999999999999999999999999",
    "asset": "BTC\x00",
    "outcome": "confirm",
    "count": "1e3",
    "internal_user_id": "",
    "email": "@@",
    "network": "ton",
    "to": "0x" + "g" * 40,
    "text": "asset,to,amount\n" + ",,,,,\n" * 5,
    "csv": '"unterminated',
    "action": "send",
    "enabled_btc": "maybe",
    "amount_btc": "NaN",
    "static_btc": "Infinity",
    "percentage_btc": "-0.001",
}


@pytest.mark.parametrize("path", [p for p in POSTS if "logout" not in p])
def test_garbage_in_every_form_is_refused_without_a_server_error(dash, objects, path):
    response = dash.post(path.format(**objects), GARBAGE)

    assert response.status_code < 500

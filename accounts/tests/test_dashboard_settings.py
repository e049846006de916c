"""Settings pages: token and signing secret, webhook URL and test event, payment settings, limits."""

# ruff: noqa: F811 - the fixtures imported from test_dashboard_support are this module's test parameters

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from core.errors import InvalidState, ValidationFailed
from invoices.models import UnderpaymentLimit
from payments.services import (
    company_previous_signing_secret,
    company_set_signing_secret,
    company_signing_secret,
)
from security.testing import mark_step_up_fresh
from tests.dashboard import (  # noqa: F401 - fixtures
    company_of,
    dash,
    dashboard_rates,
    text,
)
from webhooks.models import WebhookEvent
from webhooks.probe import webhook_send_test
from webhooks.receiver import Reply, WebhookReceiver

pytestmark = pytest.mark.django_db

API = "/dashboard/settings/api/"
PAYMENTS = "/dashboard/settings/payments/"
PUBLIC_URL = "https://93.184.215.14/kassa/hook"  # a literal public address: no DNS needed


@pytest.fixture(autouse=True)
def _stepped_up(request):  # type: ignore[no-untyped-def]
    """The credential actions need a fresh step-up (security.stepup); these tests start with one. Their
    refusal without one is tested in security/tests/test_settings_step_up.py."""
    if "dash" in request.fixturenames:
        mark_step_up_fresh(request.getfixturevalue("dash").client)


def _api(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


# --- public token ---------------------------------------------------------------------------------------


def test_the_tokens_page_shows_only_the_prefix(dash, merchant):
    html = text(dash.get(API))

    assert merchant.public_token not in html
    assert company_of(merchant).token_prefix in html


def test_rotating_the_token_shows_the_new_one_once_and_retires_the_old(dash, merchant):
    response = dash.post("/dashboard/settings/api/token/rotate/")

    assert response.status_code == 302
    page = text(dash.get(API))
    new_token = re.search(r'data-testid="public-token">([^<]+)<', page).group(1)  # type: ignore[union-attr]
    assert new_token != merchant.public_token
    assert _api(new_token).get("/api/company/balances").status_code == 200
    assert _api(merchant.public_token).get("/api/company/balances").status_code == 401
    assert new_token not in text(dash.get(API))


# --- signing secret -------------------------------------------------------------------------------------


def test_the_secret_is_revealed_after_a_fresh_confirmation(dash, merchant):
    assert merchant.signing_secret not in text(dash.get(API))

    response = dash.post("/dashboard/settings/api/secret/reveal/")

    assert response.status_code == 200
    assert merchant.signing_secret in text(response)
    assert merchant.signing_secret not in text(dash.get(API))


def test_rotating_the_secret_changes_it_and_shows_it_once(dash, merchant):
    dash.post("/dashboard/settings/api/secret/rotate/")

    secret = company_signing_secret(company_of(merchant))
    assert secret != merchant.signing_secret
    assert secret in text(dash.get(API))
    assert secret not in text(dash.get(API))


def test_rotating_the_secret_in_the_dashboard_starts_an_overlap_shown_on_the_page(dash, merchant, settings):
    settings.WEBHOOK_SECRET_OVERLAP_HOURS = 24
    before = text(dash.get(API))

    dash.post("/dashboard/settings/api/secret/rotate/")

    company = company_of(merchant)
    assert "also signs every webhook until" not in before
    assert company_previous_signing_secret(company) == merchant.signing_secret
    page = text(dash.get(API))
    assert "also signs every webhook until" in page
    assert company.previous_signing_secret_until.strftime("%Y-%m-%d %H:%M") in page


def test_the_merchant_may_set_their_own_secret(dash, merchant):
    response = dash.post("/dashboard/settings/api/secret/", {"secret": "my own secret: 42 is the answer!"})

    assert response.status_code == 302
    assert company_signing_secret(company_of(merchant)) == "my own secret: 42 is the answer!"


@pytest.mark.parametrize(
    ("secret", "message"),
    [
        ("short", "16 to 128 characters long (it has 5)"),
        ("x" * 129, "16 to 128 characters long (it has 129)"),
        ("sixteen chars ok\u00e9", "printable ASCII"),
        ("tab\tinside the secret", "printable ASCII"),
        (" leading space secret", "must not start or end with a space"),
        ("trailing space secret ", "must not start or end with a space"),
        ("", "This field is required."),
    ],
)
def test_a_bad_own_secret_is_refused_and_the_old_one_stays(dash, merchant, secret, message):
    response = dash.post("/dashboard/settings/api/secret/", {"secret": secret})

    assert response.status_code == 200
    assert message in text(response)
    assert company_signing_secret(company_of(merchant)) == merchant.signing_secret


@pytest.mark.parametrize("length", [16, 128])
def test_the_secret_length_limits_are_inclusive(merchant, length):
    company_set_signing_secret(company_id=merchant.company.pk, secret="s" * length)

    assert company_signing_secret(company_of(merchant)) == "s" * length


def test_the_set_secret_service_refuses_what_the_form_refuses(merchant):
    with pytest.raises(ValidationFailed) as raised:
        company_set_signing_secret(company_id=merchant.company.pk, secret="short")

    assert raised.value.errors[0].field == "secret"


# --- webhook URL ----------------------------------------------------------------------------------------


def test_the_webhook_url_is_saved(dash, merchant):
    response = dash.post("/dashboard/settings/api/webhook/", {"url": f"  {PUBLIC_URL}  "})

    assert response.status_code == 302
    assert company_of(merchant).webhook_url == PUBLIC_URL


def test_an_empty_webhook_url_clears_it(dash, merchant):
    dash.post("/dashboard/settings/api/webhook/", {"url": PUBLIC_URL})

    dash.post("/dashboard/settings/api/webhook/", {"url": ""})

    assert company_of(merchant).webhook_url == ""


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9000/hook",
        "http://10.0.0.5/hook",
        "ftp://93.184.215.14/hook",
        "not a url",
        "http://localhost/hook",
        "https://" + "a" * 2100 + ".test/",
    ],
)
def test_a_refused_webhook_url_shows_the_apis_error_and_changes_nothing(dash, merchant, api, url):
    dash.post("/dashboard/settings/api/webhook/", {"url": PUBLIC_URL})
    api_error = api.generic(
        "PUT",
        "/api/company/settings/webhook-url",
        json.dumps({"webHookUrl": url}),
        content_type="application/json",
    ).json()["errors"][0]["message"]

    response = dash.post("/dashboard/settings/api/webhook/", {"url": url})

    assert response.status_code == 200
    assert api_error.replace("'", "&#x27;").replace('"', "&quot;") in text(response)
    assert company_of(merchant).webhook_url == PUBLIC_URL


# --- test event -----------------------------------------------------------------------------------------


@pytest.fixture
def receiver(settings):  # type: ignore[no-untyped-def]
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    with WebhookReceiver() as hook:
        yield hook


def test_the_test_event_is_signed_sent_now_and_not_stored(dash, merchant, receiver):
    receiver.secret = merchant.signing_secret
    dash.post("/dashboard/settings/api/webhook/", {"url": receiver.url})

    response = dash.post("/dashboard/settings/api/webhook/test/", follow=True)

    assert len(receiver.received) == 1
    got = receiver.received[0]
    assert got.verified is True
    assert json.loads(got.body)["type"] == "test"
    assert got.headers["webhook-id"] == json.loads(got.body)["id"]
    html = text(response)
    assert "Delivered" in html and "HTTP 200" in html
    assert not WebhookEvent.objects.exists()


def test_the_test_event_reports_the_receivers_error_answer(dash, merchant, receiver):
    receiver.default = Reply(status=500, body=b"database is down")
    dash.post("/dashboard/settings/api/webhook/", {"url": receiver.url})

    html = text(dash.post("/dashboard/settings/api/webhook/test/", follow=True))

    assert "Not delivered" in html and "HTTP 500" in html
    assert "database is down" in html


def test_a_redirect_is_reported_and_not_followed(dash, merchant, receiver):
    receiver.default = Reply(status=302, headers={"Location": "http://127.0.0.1:1/elsewhere"})
    dash.post("/dashboard/settings/api/webhook/", {"url": receiver.url})

    result = webhook_send_test(company=company_of(merchant))

    assert result.status_code == 302 and not result.succeeded
    assert "not followed" in result.error
    assert len(receiver.received) == 1


def test_an_unreachable_receiver_is_reported_not_raised(dash, merchant, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    dash.post("/dashboard/settings/api/webhook/", {"url": "http://127.0.0.1:1/hook"})

    response = dash.post("/dashboard/settings/api/webhook/test/", follow=True)

    assert response.status_code == 200
    assert "Not delivered" in text(response) and "no answer" in text(response)


def test_the_guard_still_applies_when_private_hosts_were_allowed_at_save_time(dash, merchant, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    dash.post("/dashboard/settings/api/webhook/", {"url": "http://127.0.0.1:1/hook"})
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = False

    result = webhook_send_test(company=company_of(merchant))

    assert result.status_code is None and "SSRF guard" in result.error


def test_a_test_event_without_url_says_what_to_do(dash, merchant):
    response = dash.post("/dashboard/settings/api/webhook/test/", follow=True)

    assert "Set a webhook URL before sending a test event." in text(response)
    with pytest.raises(InvalidState):
        webhook_send_test(company=company_of(merchant))


# --- payment settings -----------------------------------------------------------------------------------


def test_payment_settings_are_saved(dash, merchant):
    response = dash.post(
        PAYMENTS,
        {
            "allowed_assets": ["usdt", "btc"],
            "default_fee_payer": "merchant",
            "redirect_url": "https://shop.example/thanks",
        },
    )

    assert response.status_code == 302
    company = company_of(merchant)
    assert company.allowed_assets == ["btc", "usdt"]
    assert company.default_fee_payer == "merchant"
    assert company.redirect_url == "https://shop.example/thanks"
    assert 'value="merchant"' in text(dash.get(PAYMENTS))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"allowed_assets": [], "default_fee_payer": "buyer"}, "Allow at least one asset."),
        ({"allowed_assets": ["doge"], "default_fee_payer": "buyer"}, "Select a valid choice."),
        ({"allowed_assets": ["btc"], "default_fee_payer": "nobody"}, "Select a valid choice."),
        (
            {"allowed_assets": ["btc"], "default_fee_payer": "buyer", "redirect_url": "ftp://x.test/"},
            "Only http",
        ),
        ({"allowed_assets": ["btc"], "default_fee_payer": "buyer", "redirect_url": "not a url"}, "valid URL"),
    ],
)
def test_bad_payment_settings_change_nothing(dash, merchant, body, message):
    before = company_of(merchant)

    response = dash.post(PAYMENTS, body)

    assert response.status_code == 200
    assert message in text(response)
    after = company_of(merchant)
    assert (after.allowed_assets, after.default_fee_payer, after.redirect_url) == (
        before.allowed_assets,
        before.default_fee_payer,
        before.redirect_url,
    )


def _limits(**rows: tuple[str, str]) -> dict[str, str]:
    body = {}
    for code, (static, percentage) in rows.items():
        body[f"static_{code}"] = static
        body[f"percentage_{code}"] = percentage
    return body


def test_underpayment_limits_are_saved_and_shown(dash, merchant, api):
    response = dash.post(
        "/dashboard/settings/payments/underpayment/", _limits(btc=("0.0001", "1.5"), ton=("", ""))
    )

    assert response.status_code == 302
    limit = UnderpaymentLimit.objects.get(company=merchant.company, code="btc")
    assert (limit.static, limit.percentage) == (Decimal("0.0001"), Decimal("1.5"))
    assert api.get("/api/company/underpayment-limits").json()["assets"]["btc"] == {
        "static": "0.0001",
        "percentage": 1.5,
    }
    assert 'value="0.0001"' in text(dash.get(PAYMENTS))


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (("0", "101"), "Ensure this value is less than or equal to 100."),
        (("-1", "0"), "Ensure this value is greater than or equal to 0."),
        (("abc", "0"), "Must be a plain decimal number in the ASCII digits 0-9, e.g. 10.5."),
        (("0.000000001", "0"), "btc amounts have at most 8 decimals"),
        (("0", "1.234"), "Ensure that there are no more than 2 decimal places."),
        (("NaN", "0"), "Must be a plain decimal number in the ASCII digits 0-9, e.g. 10.5."),
    ],
)
def test_bad_limits_save_nothing_not_even_the_good_rows(dash, merchant, row, message):
    response = dash.post("/dashboard/settings/payments/underpayment/", _limits(eth=("0.01", "2"), btc=row))

    assert response.status_code == 200
    assert message in text(response)
    assert not UnderpaymentLimit.objects.exists()

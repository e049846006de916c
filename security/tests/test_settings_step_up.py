"""The credential actions of the API settings page: without a fresh step-up nothing changes and the step-up
page takes the action's place; confirmed there, the action is done at once and its result shown; each done
action audited."""

from __future__ import annotations

import re

import pytest

from payments.models import Company
from payments.services import company_signing_secret, token_hash
from security.models import AuditEvent
from security.testing import mark_step_up_fresh
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db

API = "/dashboard/settings/api/"
REFERER = {"HTTP_REFERER": "http://testserver/dashboard/settings/api/"}
ACTIONS = [
    ("/dashboard/settings/api/token/rotate/", {}, "token.rotate"),
    ("/dashboard/settings/api/secret/reveal/", {}, "secret.reveal"),
    ("/dashboard/settings/api/secret/rotate/", {}, "secret.rotate"),
    ("/dashboard/settings/api/secret/", {"secret": "my own secret: 42 is the answer!"}, "secret.set"),
    ("/dashboard/settings/api/webhook/", {"url": "https://93.184.215.14/hook?token=abc"}, "webhook_url.set"),
]


def _credentials(merchant) -> tuple[str, str, str]:  # type: ignore[no-untyped-def]
    company = Company.objects.get(pk=merchant.company.pk)
    return company.token_hash, company_signing_secret(company), company.webhook_url


@pytest.mark.parametrize(("path", "data", "action"), ACTIONS)
def test_without_a_fresh_step_up_nothing_changes(dash, merchant, path, data, action):
    before = _credentials(merchant)

    response = dash.post(path, data, **REFERER)

    html = response.content.decode()
    assert response.status_code == 200 and "Confirm it's you" in html
    assert f'action="{path}"' in html and 'href="/dashboard/settings/api/">Cancel</a>' in html
    assert merchant.signing_secret not in html
    assert _credentials(merchant) == before
    assert not AuditEvent.objects.exists()


@pytest.mark.parametrize(("path", "data", "action"), ACTIONS)
def test_with_a_fresh_step_up_the_action_is_done_and_audited(dash, merchant, path, data, action):
    mark_step_up_fresh(dash.client)

    response = dash.post(path, data, HTTP_USER_AGENT="Mozilla/5.0 (X11) Test")

    assert response.status_code in (200, 302)
    event = AuditEvent.objects.get()
    assert (event.action, event.company_id, event.user_id) == (
        action,
        merchant.company.pk,
        merchant.company.owner.pk,
    )
    assert (event.ip, event.user_agent) == ("127.0.0.1", "Mozilla/5.0 (X11) Test")
    if action != "secret.reveal":
        assert _credentials(merchant) != (merchant.company.token_hash, merchant.signing_secret, "")


def test_the_audit_never_holds_the_secret_the_token_or_the_url_query(dash, merchant):
    mark_step_up_fresh(dash.client)
    for path, data, _ in ACTIONS:
        dash.post(path, data)

    details = " ".join(AuditEvent.objects.values_list("detail", flat=True))
    company = Company.objects.get(pk=merchant.company.pk)
    assert company_signing_secret(company) not in details
    assert "42 is the answer" not in details
    assert "token=abc" not in details and "93.184.215.14" in details
    assert company.token_prefix in details


@pytest.mark.parametrize(("path", "data", "action"), ACTIONS)
def test_confirmed_on_the_step_up_page_the_action_is_done_at_once(clock, dash, merchant, path, data, action):
    before = _credentials(merchant)
    dash.post(path, data, **REFERER)

    response = dash.post(path, {**data, "step_up-secret": PASSWORD, "step_up-next": API}, follow=True)

    html = response.content.decode()
    assert response.status_code == 200 and "Confirm it's you" not in html
    assert list(AuditEvent.objects.order_by("pk").values_list("action", flat=True)) == [
        "stepup.confirm",
        action,
    ]
    if action != "secret.reveal":
        assert _credentials(merchant) != before
    company = Company.objects.get(pk=merchant.company.pk)
    if action in ("secret.reveal", "secret.rotate"):
        assert company_signing_secret(company) in html
    shown = {"secret.set": "Your signing secret was saved.", "webhook_url.set": "Webhook URL saved."}
    assert shown.get(action, "") in html


def test_rotating_the_token_through_the_step_up_page_shows_the_new_token(clock, dash, merchant):
    page = dash.post("/dashboard/settings/api/token/rotate/", **REFERER)
    assert Company.objects.get(pk=merchant.company.pk).token_hash == merchant.company.token_hash

    response = dash.post(
        "/dashboard/settings/api/token/rotate/",
        {"step_up-secret": PASSWORD, "step_up-next": API},
        follow=True,
    )

    html = response.content.decode()
    token = re.search(r'data-testid="public-token">(kassa_pk_[A-Za-z0-9_-]+)<', html)
    assert "Confirm it's you" in page.content.decode()
    assert response.redirect_chain == [(API, 302)]
    assert "A new public token was issued. The old one no longer works." in html
    assert (
        token is not None
        and token_hash(token.group(1)) == Company.objects.get(pk=merchant.company.pk).token_hash
    )


def test_a_wrong_password_on_the_step_up_page_rotates_nothing(clock, dash, merchant):
    response = dash.post(
        "/dashboard/settings/api/token/rotate/", {"step_up-secret": "not it", "step_up-next": API}
    )

    assert response.status_code == 400 and "That is not your password." in response.content.decode()
    assert Company.objects.get(pk=merchant.company.pk).token_hash == merchant.company.token_hash
    assert list(AuditEvent.objects.values_list("action", flat=True)) == ["stepup.fail"]


def test_the_test_webhook_needs_no_step_up(dash, merchant):
    response = dash.post("/dashboard/settings/api/webhook/test/")

    assert response.status_code == 302 and response["Location"] == API


def test_an_expired_step_up_is_refused_again(clock, dash, merchant, settings):
    settings.DASHBOARD_STEP_UP_SECONDS = 300
    mark_step_up_fresh(dash.client)
    clock.advance(300)

    response = dash.post("/dashboard/settings/api/secret/rotate/")

    assert response.status_code == 200 and "Confirm it's you" in response.content.decode()
    assert company_signing_secret(Company.objects.get(pk=merchant.company.pk)) == merchant.signing_secret

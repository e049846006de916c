"""Step-up: a fresh password or code marks the session for DASHBOARD_STEP_UP_SECONDS; guarded views
refuse without it: a page sends the browser to the step-up page, which brings it back; an action shows the
step-up page in its place and is carried out once the secret posted with it is right."""

from __future__ import annotations

import pytest
from django.http import HttpResponse
from django.test import RequestFactory

from security import stepup
from security.dashboard.step_up import step_up_required
from security.models import AuditEvent
from security.tests.conftest import code_at, wrong_code
from tests.factories import PASSWORD, TotpDeviceFactory, UserFactory

pytestmark = pytest.mark.django_db

STEP_UP = "/dashboard/confirm/"


def _request(user, method="get", path="/dashboard/settings/api/", **extra):  # type: ignore[no-untyped-def]
    from django.contrib.sessions.backends.db import SessionStore

    request = getattr(RequestFactory(), method)(path, **extra)
    request.user = user
    request.session = SessionStore()
    return request


def test_the_password_makes_the_session_fresh_until_the_time_is_up(clock, owner, settings):
    settings.DASHBOARD_STEP_UP_SECONDS = 300
    request = _request(owner)
    assert stepup.is_fresh(request) is False

    assert stepup.confirm(request, PASSWORD) is True

    assert stepup.is_fresh(request) is True
    clock.advance(299)
    assert stepup.is_fresh(request) is True
    clock.advance(1)
    assert stepup.is_fresh(request) is False


def test_a_current_code_confirms_once(clock, owner, device):
    request = _request(owner)
    code = code_at(device.secret, clock())

    assert stepup.confirm(request, code) is True
    stepup.forget(request)
    assert stepup.confirm(request, code) is False  # the same code again: replay


def test_a_code_does_not_confirm_a_user_without_an_authenticator(clock, owner):
    other = TotpDeviceFactory(user=UserFactory())

    assert stepup.confirm(_request(owner), code_at(other.secret, clock())) is False


@pytest.mark.parametrize("secret", ["", "wrong password", "123456", "x" * 300])
def test_a_wrong_secret_confirms_nothing_and_is_audited(clock, owner, secret):
    request = _request(owner)

    assert stepup.confirm(request, secret) is False

    assert stepup.is_fresh(request) is False
    assert list(AuditEvent.objects.values_list("action", flat=True)) == ["stepup.fail"]


def test_failures_lock_the_step_up_even_for_the_right_password(clock, owner, settings):
    settings.DASHBOARD_LOGIN_FAILURE_LIMIT = 3
    for _ in range(3):
        assert stepup.confirm(_request(owner), "wrong password") is False

    request = _request(owner)

    assert stepup.confirm(request, PASSWORD) is False
    assert stepup.is_fresh(request) is False
    assert stepup.is_locked(request) is True


def test_a_confirmation_is_audited_with_how(clock, owner, device):
    stepup.confirm(_request(owner, HTTP_USER_AGENT="Firefox/140"), code_at(device.secret, clock()))

    event = AuditEvent.objects.get()
    assert (event.action, event.detail, event.ip, event.user_agent) == (
        "stepup.confirm",
        "with authenticator code",
        "127.0.0.1",
        "Firefox/140",
    )
    assert event.user == owner


def test_the_session_mark_from_the_future_or_garbage_is_not_fresh(clock, owner):
    request = _request(owner)
    request.session[stepup.SESSION_KEY] = clock() + 10
    assert stepup.is_fresh(request) is False
    request.session[stepup.SESSION_KEY] = "yesterday"
    assert stepup.is_fresh(request) is False


# --- the decorator ---------------------------------------------------------------------------------------


@step_up_required
def _guarded(request):  # type: ignore[no-untyped-def]
    _guarded.ran += 1  # type: ignore[attr-defined]
    return HttpResponse("done")


_guarded.ran = 0  # type: ignore[attr-defined]


def test_a_get_without_freshness_runs_nothing_and_comes_back_to_its_page(clock, owner):
    before = _guarded.ran  # type: ignore[attr-defined]

    response = _guarded(_request(owner, path="/dashboard/security/2fa/?x=1"))

    assert response.status_code == 303
    assert response["Location"] == f"{STEP_UP}?next=%2Fdashboard%2Fsecurity%2F2fa%2F%3Fx%3D1"
    assert _guarded.ran == before  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("referer", "back_to"),
    [
        ("http://testserver/dashboard/settings/api/", "/dashboard/settings/api/"),
        ("https://evil.test/dashboard/settings/api/", "/dashboard/"),
        ("//evil.test/x", "/dashboard/"),
        ("javascript:alert(1)", "/dashboard/"),
        ("", "/dashboard/"),
    ],
)
def test_a_post_without_freshness_runs_nothing_and_cancels_to_the_same_host_referer_only(
    clock, owner, referer, back_to
):
    before = _guarded.ran  # type: ignore[attr-defined]

    response = _guarded(_request(owner, method="post", HTTP_REFERER=referer))

    html = response.content.decode()
    assert response.status_code == 200 and "Confirm it's you" in html
    assert f'<a class="btn btn--ghost" href="{back_to}">Cancel</a>' in html
    assert f'name="step_up-next" value="{back_to}"' in html
    assert _guarded.ran == before  # type: ignore[attr-defined]


def test_a_post_without_freshness_shows_the_step_up_in_its_place_carrying_its_fields(clock, owner):
    data = {
        "name": 'a "quoted" name',
        "scopes": ["balances:read", "invoices:read"],
        "csrfmiddlewaretoken": "t",
    }

    response = _guarded(
        _request(owner, method="post", path="/dashboard/settings/api/tokens/new/?a=1", data=data)
    )

    html = response.content.decode()
    assert 'action="/dashboard/settings/api/tokens/new/?a=1"' in html
    assert '<input type="hidden" name="name" value="a &quot;quoted&quot; name">' in html
    assert '<input type="hidden" name="scopes" value="balances:read">' in html
    assert '<input type="hidden" name="scopes" value="invoices:read">' in html
    assert 'name="csrfmiddlewaretoken" value="t"' not in html
    assert 'name="step_up-secret"' in html


def test_the_secret_posted_with_the_action_confirms_and_the_action_runs(clock, owner):
    before = _guarded.ran  # type: ignore[attr-defined]
    request = _request(owner, method="post", data={"name": "x", "step_up-secret": PASSWORD})

    response = _guarded(request)

    assert response.content == b"done" and _guarded.ran == before + 1  # type: ignore[attr-defined]
    assert stepup.is_fresh(request)
    assert "step_up-secret" in request.sensitive_post_parameters  # type: ignore[attr-defined]
    assert AuditEvent.objects.get().action == "stepup.confirm"


@pytest.mark.parametrize(("secret", "status"), [("", 400), ("wrong password", 400)])
def test_a_wrong_secret_posted_with_the_action_runs_nothing(clock, owner, secret, status):
    before = _guarded.ran  # type: ignore[attr-defined]
    request = _request(
        owner, method="post", data={"name": "x", "step_up-secret": secret, "step_up-next": "/dashboard/x/"}
    )

    response = _guarded(request)

    html = response.content.decode()
    assert response.status_code == status and _guarded.ran == before  # type: ignore[attr-defined]
    assert '<input type="hidden" name="name" value="x">' in html
    assert 'href="/dashboard/x/">Cancel</a>' in html
    assert not stepup.is_fresh(request)


def test_with_freshness_the_view_runs(clock, owner):
    request = _request(owner, method="post")
    stepup.mark_fresh(request)

    assert _guarded(request).content == b"done"


# --- the page -------------------------------------------------------------------------------------------


def test_the_step_up_page_confirms_and_goes_back_to_next(clock, dash):
    page = dash.get(STEP_UP, {"next": "/dashboard/settings/api/"})
    assert page.status_code == 200 and "Password" in page.content.decode()

    response = dash.post(STEP_UP, {"secret": PASSWORD, "next": "/dashboard/settings/api/"})

    assert response.status_code == 303
    assert response["Location"] == "/dashboard/settings/api/"
    assert dash.client.session[stepup.SESSION_KEY] == clock()


@pytest.mark.parametrize("next_url", ["https://evil.test/", "//evil.test/", "/\\evil.test", "javascript:x"])
def test_the_step_up_page_never_sends_the_browser_elsewhere(clock, dash, next_url):
    response = dash.post(STEP_UP, {"secret": PASSWORD, "next": next_url})

    assert response["Location"] == "/dashboard/"


def test_the_step_up_page_offers_the_code_to_users_with_2fa(clock, dash, device):
    html = dash.get(STEP_UP).content.decode()

    assert "Password or authenticator code" in html


def test_a_wrong_secret_on_the_page_is_an_error_and_repeated_ones_a_429(clock, dash, device, settings):
    settings.DASHBOARD_LOGIN_FAILURE_LIMIT = 2
    bad = wrong_code(device.secret, clock())

    first = dash.post(STEP_UP, {"secret": bad})
    second = dash.post(STEP_UP, {"secret": "wrong password"})
    third = dash.post(STEP_UP, {"secret": PASSWORD})

    assert first.status_code == 400 and "neither your password nor a current code" in first.content.decode()
    assert second.status_code == 429
    assert third.status_code == 429 and "Too many wrong attempts" in third.content.decode()
    assert stepup.SESSION_KEY not in dash.client.session


def test_strangers_are_sent_to_the_login(anon_dash):
    response = anon_dash.get(STEP_UP)

    assert response.status_code == 302 and response["Location"].startswith("/dashboard/login/")

"""The security pages: overview, enrolment (QR code and secret), recovery codes, disabling, audit log."""

from __future__ import annotations

import re

import pyotp
import pytest

from security import recovery, totp
from security.models import AuditEvent
from security.testing import mark_step_up_fresh
from security.tests.conftest import code_at, wrong_code
from tests.factories import AuditEventFactory, CompanyFactory

pytestmark = pytest.mark.django_db

ENROL = "/dashboard/security/2fa/"


def _html(response) -> str:  # type: ignore[no-untyped-def]
    return str(response.content.decode())


def test_the_overview_shows_2fa_off_and_offers_to_turn_it_on(dash):
    html = _html(dash.get("/dashboard/security/"))

    assert "Off: your password alone logs in" in html
    assert f'href="{ENROL}"' in html
    assert 'href="/dashboard/security/audit/"' in html


def test_the_enrolment_page_shows_a_qr_code_and_the_secret(clock, dash, owner):
    mark_step_up_fresh(dash.client)

    html = _html(dash.get(ENROL))

    secret = re.search(r'data-secret="([A-Z2-7]+)"', html).group(1)  # type: ignore[union-attr]
    assert secret == totp.device_secret(owner.totp_device)
    assert "<svg" in html and 'class="qr-code"' in html and "<script" not in html.split("<main")[1]
    assert not totp.has_totp(owner)


def test_enrolment_needs_a_fresh_step_up(clock, dash, owner):
    response = dash.get(ENROL)

    assert response.status_code == 303 and response["Location"].startswith("/dashboard/confirm/")
    assert not hasattr(owner, "totp_device") or owner.totp_device is None


def test_a_wrong_code_does_not_turn_it_on(clock, dash, owner):
    mark_step_up_fresh(dash.client)
    dash.get(ENROL)
    secret = totp.device_secret(owner.totp_device)

    response = dash.post(ENROL, {"code": wrong_code(secret, clock())})

    assert response.status_code == 400 and "That code does not match" in _html(response)
    assert not totp.has_totp(owner)


def test_the_right_code_turns_it_on_and_shows_the_recovery_codes_once(clock, dash, owner):
    mark_step_up_fresh(dash.client)
    dash.get(ENROL)
    secret = totp.device_secret(owner.totp_device)

    response = dash.post(ENROL, {"code": code_at(secret, clock())}, follow=True)

    codes = re.findall(r"<li>([a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4})</li>", _html(response))
    assert len(codes) == 10
    assert totp.has_totp(owner)
    assert recovery.recovery_code_use(user=owner, code=codes[0])
    assert dash.get("/dashboard/security/recovery-codes/")["Location"] == "/dashboard/security/"
    assert AuditEvent.objects.get().action == "2fa.enable"


def test_turning_it_off_needs_a_step_up_and_is_audited(clock, dash, owner, device):
    refused = dash.post("/dashboard/security/2fa/disable/")
    assert refused.status_code == 200 and "Confirm it's you" in _html(refused) and totp.has_totp(owner)
    mark_step_up_fresh(dash.client)

    done = dash.post("/dashboard/security/2fa/disable/")

    assert done.status_code == 302 and not totp.has_totp(owner)
    assert AuditEvent.objects.get().action == "2fa.disable"


def test_turning_it_off_is_refused_when_2fa_is_required(clock, dash, owner, device, settings):
    settings.DASHBOARD_REQUIRE_2FA = True
    mark_step_up_fresh(dash.client)

    response = dash.post("/dashboard/security/2fa/disable/", follow=True)

    assert "cannot be turned off" in _html(response)
    assert totp.has_totp(owner)


def test_new_recovery_codes_retire_the_old_ones(clock, dash, owner, device):
    mark_step_up_fresh(dash.client)

    response = dash.post("/dashboard/security/recovery-codes/new/", follow=True)

    codes = re.findall(r"<li>([a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4})</li>", _html(response))
    assert len(codes) == 10 and not set(codes) & set(device.recovery_codes)
    assert not recovery.recovery_code_use(user=owner, code=device.recovery_codes[0])
    assert AuditEvent.objects.get().action == "recovery_codes.regenerate"


def test_the_audit_log_lists_the_companys_events_newest_first_with_labels(dash, merchant):
    AuditEventFactory(company=merchant.company, action="token.rotate", detail="new token kassa_pk_ab…")
    AuditEventFactory(company=merchant.company, action="some.future_action", detail="raw")
    AuditEventFactory(company=CompanyFactory(), action="secret.rotate", detail="someone else's")

    html = _html(dash.get("/dashboard/security/audit/")).split('data-testid="audit-log"')[1]  # the table

    assert html.index("some.future_action") < html.index("API token rotated")
    assert "new token kassa_pk_ab…" in html
    assert "someone else&#x27;s" not in html and "Signing secret rotated" not in html


def test_the_audit_log_pages_by_keyset(dash, merchant, django_assert_max_num_queries):
    for number in range(30):
        AuditEventFactory(company=merchant.company, detail=f"event {number:02d}")

    with django_assert_max_num_queries(9):  # with the company's 2FA requirement and the member filter
        first = _html(dash.get("/dashboard/security/audit/"))
    after = re.search(r'href="\?after=([^"]+)"', first).group(1)  # type: ignore[union-attr]
    second = _html(dash.get("/dashboard/security/audit/", {"after": after}))

    assert "event 29" in first and "event 05" in first and "event 04" not in first
    assert "event 04" in second and "event 00" in second and "event 05" not in second
    assert dash.get("/dashboard/security/audit/", {"after": "garbage!"}).status_code == 200


def test_an_audit_row_from_the_command_line_has_no_address(merchant):
    event = AuditEventFactory(company=merchant.company)

    assert event.ip is None and event.user is None and event.user_agent == ""


def test_a_forged_forwarded_address_is_not_stored_as_one(merchant, settings, rf):
    from security.audit import audit_record

    settings.NUM_PROXIES = 1
    request = rf.get("/", HTTP_X_FORWARDED_FOR="not-an-address", HTTP_USER_AGENT="x" * 1000)

    event = audit_record(request, company=merchant.company, action="token.rotate", detail="d" * 1000)

    assert event.ip is None and len(event.user_agent) == 255 and len(event.detail) == 255


def test_the_uri_in_the_qr_code_is_a_totp_uri(clock, owner):
    device = totp.totp_enrol_start(user=owner)

    uri = totp.provisioning_uri(device, owner.get_username())

    assert pyotp.parse_uri(uri).secret == totp.device_secret(device)


def test_the_operator_command_turns_2fa_off_and_records_it(clock, merchant, owner, device):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("disable_2fa", "--email", "OWNER@acme.test", stdout=out)

    assert "is off" in out.getvalue()
    assert not totp.has_totp(owner)
    event = AuditEvent.objects.get()
    assert (event.action, event.detail, event.ip) == ("2fa.disable", "by an operator", None)

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from core import keys
from core.wire import iso_utc
from payments.models import Company
from payments.services import company_rotate_token, company_signing_secret
from security.models import AuditEvent

pytestmark = pytest.mark.django_db


def _run(*args):
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def _auth_status(token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client.put("/api/company/settings/webhook-url", {"webHookUrl": None}, format="json").status_code


def test_create_merchant_json_prints_working_credentials():
    out = _run(
        "create_merchant",
        "--name",
        "Shop",
        "--email",
        "Owner@Shop.test",
        "--password",
        "pw-123456!",
        "--json",
    )

    data = json.loads(out)
    assert list(data) == ["companyId", "email", "publicToken", "signingSecret"]
    assert data["email"] == "owner@shop.test"
    company = Company.objects.get(pk=data["companyId"])
    assert company.owner.check_password("pw-123456!")
    assert company.number == 1
    assert company.uid_prefix == "001"
    assert _auth_status(data["publicToken"]) == 200
    assert company_signing_secret(company) == data["signingSecret"]


def test_signing_secret_is_encrypted_at_rest():
    data = json.loads(_run("create_merchant", "--name", "Shop", "--email", "a@shop.test", "--json"))

    stored = Company.objects.get(pk=data["companyId"]).signing_secret_encrypted

    assert data["signingSecret"] not in stored
    assert data["signingSecret"].startswith("whsec_")
    assert keys.decrypt(stored) == data["signingSecret"]


def test_company_numbers_increase_and_never_repeat():
    first = json.loads(_run("create_merchant", "--name", "A", "--email", "a@shop.test", "--json"))
    second = json.loads(_run("create_merchant", "--name", "B", "--email", "b@shop.test", "--json"))

    numbers = [Company.objects.get(pk=d["companyId"]).number for d in (first, second)]

    assert numbers == [1, 2]


def test_create_merchant_twice_with_one_email_fails_cleanly():
    _run("create_merchant", "--name", "A", "--email", "a@shop.test")

    with pytest.raises(CommandError, match="exists"):
        _run("create_merchant", "--name", "B", "--email", "A@shop.test")
    assert Company.objects.count() == 1


def test_rotate_token_by_email_revokes_the_old_one():
    created = json.loads(_run("create_merchant", "--name", "A", "--email", "a@shop.test", "--json"))

    rotated = json.loads(_run("rotate_token", "--email", "a@shop.test", "--json"))

    assert rotated["publicToken"] != created["publicToken"]
    assert _auth_status(created["publicToken"]) == 401
    assert _auth_status(rotated["publicToken"]) == 200


def test_rotate_signing_secret_by_company_number():
    created = json.loads(_run("create_merchant", "--name", "A", "--email", "a@shop.test", "--json"))

    rotated = json.loads(_run("rotate_signing_secret", "--company", "1", "--json"))

    assert rotated["signingSecret"] != created["signingSecret"]
    company = Company.objects.get(number=1)
    assert company_signing_secret(company) == rotated["signingSecret"]
    # When `signature` switches to the new secret, which a receiver checking it alone must know.
    assert rotated["overlapEndsAt"] == iso_utc(company.previous_signing_secret_until)


def test_rotate_signing_secret_without_overlap_says_the_switch_is_now():
    json.loads(_run("create_merchant", "--name", "A", "--email", "a@shop.test", "--json"))

    rotated = json.loads(_run("rotate_signing_secret", "--company", "1", "--overlap-hours", "0", "--json"))

    assert rotated["overlapEndsAt"] is None


def test_rotate_for_unknown_company_is_a_clear_error():
    with pytest.raises(CommandError, match="No company"):
        _run("rotate_token", "--company", "not-a-uuid")


def test_demo_merchant_is_created_once_and_its_printed_token_works(settings, tmp_path):
    settings.VAR_DIR = tmp_path

    first = _run("demo_merchant")
    second = _run("demo_merchant")

    token = next(line.split()[-1] for line in first.splitlines() if "public token" in line)
    assert token in second  # the same token again, from var/demo-merchant.json
    assert Company.objects.count() == 1
    assert _auth_status(token) == 200
    assert "demo@kassa.local" in first


def _token_line(out):
    return next(line.split()[2] for line in out.splitlines() if "public token" in line)


@pytest.mark.parametrize("how", ["rotated on the dashboard", "file gone"])
def test_demo_merchant_run_again_never_rotates_the_token(settings, tmp_path, how):
    settings.VAR_DIR = tmp_path
    first = _token_line(_run("demo_merchant"))
    company = Company.objects.get()
    if how == "file gone":
        (tmp_path / "demo-merchant.json").unlink()
        current = first
    else:
        current = company_rotate_token(company_id=company.pk)  # what the dashboard showed
    before = Company.objects.values_list("token_hash", "token_rotated_at", "updated_at").get()
    err = StringIO()

    out = StringIO()
    call_command("demo_merchant", stdout=out, stderr=err)

    assert _token_line(out.getvalue()) == "unknown"
    assert Company.objects.values_list("token_hash", "token_rotated_at", "updated_at").get() == before
    assert _auth_status(current) == 200
    assert "--rotate-token" in err.getvalue() and Company.objects.get().token_prefix in err.getvalue()
    assert not AuditEvent.objects.exists()


def test_demo_merchant_rotates_only_when_asked_and_audits_it(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    old = _token_line(_run("demo_merchant"))

    new = _token_line(_run("demo_merchant", "--rotate-token"))
    again = _token_line(_run("demo_merchant"))

    assert old != new and again == new
    assert _auth_status(old) == 401 and _auth_status(new) == 200
    event = AuditEvent.objects.get()
    assert (event.action, event.user, event.ip) == ("token.rotate", None, None)
    assert "demo_merchant --rotate-token" in event.detail and new not in event.detail


def test_rotate_token_command_is_audited(merchant):
    out = _run("rotate_token", "--company", str(merchant.company.pk))

    event = AuditEvent.objects.get()
    assert (event.action, event.company_id) == ("token.rotate", merchant.company.pk)
    assert "by manage.py rotate_token" in event.detail
    assert out.split()[1] not in event.detail

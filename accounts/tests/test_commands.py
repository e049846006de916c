"""The account commands: rotate_token and demo_merchant."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from payments.models import Company
from payments.services import company_rotate_token
from security.models import AuditEvent
from tests.commands import auth_status, run_command

pytestmark = pytest.mark.django_db


def _token_line(out):
    return next(line.split()[2] for line in out.splitlines() if "public token" in line)


def test_rotate_token_by_email_revokes_the_old_one():
    created = json.loads(run_command("create_merchant", "--name", "A", "--email", "a@shop.test", "--json"))

    rotated = json.loads(run_command("rotate_token", "--email", "a@shop.test", "--json"))

    assert rotated["publicToken"] != created["publicToken"]
    assert auth_status(created["publicToken"]) == 401
    assert auth_status(rotated["publicToken"]) == 200


def test_demo_merchant_is_created_once_and_its_printed_token_works(settings, tmp_path):
    settings.VAR_DIR = tmp_path

    first = run_command("demo_merchant")
    second = run_command("demo_merchant")

    token = next(line.split()[-1] for line in first.splitlines() if "public token" in line)
    assert token in second  # the same token again, from var/demo-merchant.json
    assert Company.objects.count() == 1
    assert auth_status(token) == 200
    assert "demo@kassa.local" in first


@pytest.mark.parametrize("how", ["rotated on the dashboard", "file gone"])
def test_demo_merchant_run_again_never_rotates_the_token(settings, tmp_path, how):
    settings.VAR_DIR = tmp_path
    first = _token_line(run_command("demo_merchant"))
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
    assert auth_status(current) == 200
    assert "--rotate-token" in err.getvalue() and Company.objects.get().token_prefix in err.getvalue()
    assert not AuditEvent.objects.exists()


def test_demo_merchant_rotates_only_when_asked_and_audits_it(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    old = _token_line(run_command("demo_merchant"))

    new = _token_line(run_command("demo_merchant", "--rotate-token"))
    again = _token_line(run_command("demo_merchant"))

    assert old != new and again == new
    assert auth_status(old) == 401 and auth_status(new) == 200
    event = AuditEvent.objects.get()
    assert (event.action, event.user, event.ip) == ("token.rotate", None, None)
    assert "demo_merchant --rotate-token" in event.detail and new not in event.detail


def test_rotate_token_command_is_audited(merchant):
    out = run_command("rotate_token", "--company", str(merchant.company.pk))

    event = AuditEvent.objects.get()
    assert (event.action, event.company_id) == ("token.rotate", merchant.company.pk)
    assert "by manage.py rotate_token" in event.detail
    assert out.split()[1] not in event.detail

import json

import pytest
from django.core.management import CommandError

from core import keys
from core.wire import iso_utc
from payments.models import Company
from payments.services import company_signing_secret
from tests.commands import auth_status, run_command

pytestmark = pytest.mark.django_db


def test_create_merchant_json_prints_working_credentials():
    out = run_command(
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
    assert auth_status(data["publicToken"]) == 200
    assert company_signing_secret(company) == data["signingSecret"]


def test_signing_secret_is_encrypted_at_rest():
    data = json.loads(run_command("create_merchant", "--name", "Shop", "--email", "a@shop.test", "--json"))

    stored = Company.objects.get(pk=data["companyId"]).signing_secret_encrypted

    assert data["signingSecret"] not in stored
    assert data["signingSecret"].startswith("whsec_")
    assert keys.decrypt(stored) == data["signingSecret"]


def test_company_numbers_increase_and_never_repeat():
    first = json.loads(run_command("create_merchant", "--name", "A", "--email", "a@shop.test", "--json"))
    second = json.loads(run_command("create_merchant", "--name", "B", "--email", "b@shop.test", "--json"))

    numbers = [Company.objects.get(pk=d["companyId"]).number for d in (first, second)]

    assert numbers == [1, 2]


def test_create_merchant_twice_with_one_email_fails_cleanly():
    run_command("create_merchant", "--name", "A", "--email", "a@shop.test")

    with pytest.raises(CommandError, match="exists"):
        run_command("create_merchant", "--name", "B", "--email", "A@shop.test")
    assert Company.objects.count() == 1


def test_rotate_signing_secret_by_company_number():
    created = json.loads(run_command("create_merchant", "--name", "A", "--email", "a@shop.test", "--json"))

    rotated = json.loads(run_command("rotate_signing_secret", "--company", "1", "--json"))

    assert rotated["signingSecret"] != created["signingSecret"]
    company = Company.objects.get(number=1)
    assert company_signing_secret(company) == rotated["signingSecret"]
    # When `signature` switches to the new secret, which a receiver checking it alone must know.
    assert rotated["overlapEndsAt"] == iso_utc(company.previous_signing_secret_until)


def test_rotate_signing_secret_without_overlap_says_the_switch_is_now():
    json.loads(run_command("create_merchant", "--name", "A", "--email", "a@shop.test", "--json"))

    rotated = json.loads(
        run_command("rotate_signing_secret", "--company", "1", "--overlap-hours", "0", "--json")
    )

    assert rotated["overlapEndsAt"] is None


def test_rotate_for_unknown_company_is_a_clear_error():
    with pytest.raises(CommandError, match="No company"):
        run_command("rotate_token", "--company", "not-a-uuid")

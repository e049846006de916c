"""Authenticator codes: RFC 6238 with one step of drift, each accepted once; secrets encrypted at rest."""

from __future__ import annotations

import pyotp
import pytest

from security import totp
from security.models import TotpDevice
from security.tests.conftest import START, code_at, wrong_code
from tests.factories import TotpDeviceFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_the_current_code_is_accepted_once(clock, owner, device):
    code = code_at(device.secret, clock())

    assert totp.verify(owner, code) is True
    assert totp.verify(owner, code) is False  # replay


def test_an_older_code_is_refused_after_a_newer_one(clock, owner, device):
    clock.advance(30)
    previous, current = code_at(device.secret, clock() - 30), code_at(device.secret, clock())
    assert totp.verify(owner, current) is True

    assert totp.verify(owner, previous) is False


@pytest.mark.parametrize(
    ("offset", "accepted"), [(-30, True), (0, True), (30, True), (60, False), (-60, False)]
)
def test_codes_one_step_either_side_are_accepted_and_no_further(clock, owner, device, offset, accepted):
    clock.advance(120)  # past the step the factory used

    assert totp.verify(owner, code_at(device.secret, clock() + offset)) is accepted


@pytest.mark.parametrize("code", ["", "12345", "1234567", "abcdef", "12 34 5x", "٠١٢٣٤٥", "0" * 1000])
def test_malformed_codes_are_refused(clock, owner, device, code):
    assert totp.verify(owner, code) is False


def test_spaces_in_a_code_do_not_matter(clock, owner, device):
    code = code_at(device.secret, clock())

    assert totp.verify(owner, f"{code[:3]} {code[3:]}") is True


def test_a_pending_device_does_not_count_until_confirmed(clock, owner):
    device = totp.totp_enrol_start(user=owner)
    secret = totp.device_secret(device)

    assert totp.has_totp(owner) is False
    assert totp.verify(owner, code_at(secret, clock())) is False
    assert totp.totp_enrol_confirm(user=owner, code=wrong_code(secret, clock())) is False
    assert totp.totp_enrol_confirm(user=owner, code=code_at(secret, clock())) is True
    assert totp.has_totp(owner) is True


def test_enrolment_keeps_the_pending_secret_across_reloads(clock, owner):
    first = totp.device_secret(totp.totp_enrol_start(user=owner))

    second = totp.device_secret(totp.totp_enrol_start(user=owner))

    assert first == second
    assert TotpDevice.objects.filter(user=owner).count() == 1


def test_enrolling_again_is_refused_while_confirmed(clock, owner, device):
    with pytest.raises(totp.AlreadyEnrolled):
        totp.totp_enrol_start(user=owner)


def test_the_secret_is_stored_encrypted(clock, owner, device):
    stored = TotpDevice.objects.get(user=owner).secret_encrypted

    assert device.secret not in stored
    assert totp.device_secret(TotpDevice.objects.get(user=owner)) == device.secret


def test_the_provisioning_uri_names_the_issuer_and_the_account(clock, owner, device):
    uri = totp.provisioning_uri(TotpDevice.objects.get(user=owner), owner.get_username())

    parsed = pyotp.parse_uri(uri)
    assert uri.startswith("otpauth://totp/")
    assert parsed.secret == device.secret and parsed.issuer == "Kassa"
    assert parsed.digits == 6 and parsed.interval == 30


def test_one_users_code_does_not_open_another_account(clock, owner, device):
    other = UserFactory()
    TotpDeviceFactory(user=other)

    assert totp.verify(other, code_at(device.secret, clock())) is False


def test_disabling_removes_the_device_and_the_codes(clock, owner, device):
    assert totp.totp_disable(user=owner) is True

    assert totp.has_totp(owner) is False
    assert owner.recovery_codes.count() == 0
    assert totp.totp_disable(user=owner) is False


def test_the_clock_starts_on_a_step_boundary():
    assert START % 30 == 0

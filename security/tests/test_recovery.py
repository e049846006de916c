"""Recovery codes: ten, stored hashed, each usable once; a new set retires the old one."""

from __future__ import annotations

import pytest

from security import recovery
from security.models import RecoveryCode
from tests.factories import TotpDeviceFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_ten_distinct_codes_are_made_and_only_their_hashes_kept(owner):
    codes = recovery.recovery_codes_generate(user=owner)

    assert len(codes) == len(set(codes)) == 10
    stored = list(RecoveryCode.objects.filter(user=owner).values_list("code_hash", flat=True))
    assert len(stored) == 10
    assert not any(
        recovery.normalise(code) in hashed or code in hashed for code in codes for hashed in stored
    )


def test_a_code_works_once(owner):
    code = recovery.recovery_codes_generate(user=owner)[0]

    assert recovery.recovery_code_use(user=owner, code=code) is True
    assert recovery.recovery_code_use(user=owner, code=code) is False
    assert recovery.recovery_codes_left(user=owner) == 9


def test_case_spaces_and_dashes_do_not_matter(owner):
    code = recovery.recovery_codes_generate(user=owner)[3]

    assert recovery.recovery_code_use(user=owner, code=f"  {code.upper().replace('-', ' ')} ") is True


def test_a_new_set_retires_the_old_one(owner):
    old = recovery.recovery_codes_generate(user=owner)

    new = recovery.recovery_codes_generate(user=owner)

    assert not set(old) & set(new)
    assert recovery.recovery_code_use(user=owner, code=old[0]) is False
    assert recovery.recovery_code_use(user=owner, code=new[0]) is True


def test_another_users_code_does_not_work(clock, owner):
    other = TotpDeviceFactory(user=UserFactory())

    assert recovery.recovery_code_use(user=owner, code=other.recovery_codes[0]) is False
    assert recovery.recovery_code_use(user=other.user, code=other.recovery_codes[0]) is True


@pytest.mark.parametrize("code", ["", "abcd", "0000-0000-0000", "x" * 5000, "\x00" * 12, "ǅǅǅǅ-ǅǅǅǅ-ǅǅǅǅ"])
def test_malformed_codes_are_refused(owner, code):
    recovery.recovery_codes_generate(user=owner)

    assert recovery.recovery_code_use(user=owner, code=code) is False

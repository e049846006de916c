"""Recovery codes: ten single-use codes shown once at enrolment, for a lost authenticator.

Each has 60 random bits (12 base32 characters), so a plain SHA-256 is a safe way to keep it: unlike a
password there is nothing to guess from a dictionary.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from django.db import transaction
from django.utils import timezone

from security.models import RecoveryCode

COUNT = 10
_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"  # no 0/o, 1/l/i: read off paper without doubt
_LENGTH = 12


def _hash(code: str) -> str:
    return hashlib.sha256(normalise(code).encode()).hexdigest()


def normalise(code: str) -> str:
    """Case, spaces and dashes do not matter when typed."""
    return "".join(ch for ch in str(code or "").lower() if ch.isalnum())


def looks_like_recovery_code(code: str) -> bool:
    plain = normalise(code)
    return len(plain) == _LENGTH and all(ch in _ALPHABET for ch in plain)


def _new_code() -> str:
    plain = "".join(secrets.choice(_ALPHABET) for _ in range(_LENGTH))
    return "-".join(plain[i : i + 4] for i in range(0, _LENGTH, 4))


@transaction.atomic
def recovery_codes_generate(*, user: Any) -> list[str]:
    """A new set of codes in clear (to show once); the previous set stops working."""
    RecoveryCode.objects.filter(user_id=user.pk).delete()
    codes: list[str] = []
    while len(codes) < COUNT:
        code = _new_code()
        if code not in codes:
            codes.append(code)
    RecoveryCode.objects.bulk_create([RecoveryCode(user=user, code_hash=_hash(code)) for code in codes])
    return codes


@transaction.atomic
def recovery_code_use(*, user: Any, code: str) -> bool:
    """Spend one unused code of the user; True once per code."""
    if user is None or user.pk is None or not looks_like_recovery_code(code):
        return False
    row = (
        RecoveryCode.objects.select_for_update()
        .filter(user_id=user.pk, code_hash=_hash(code), used_at__isnull=True)
        .first()
    )
    if row is None:
        return False
    row.used_at = timezone.now()
    row.save(update_fields=["used_at"])
    return True


def recovery_codes_left(*, user: Any) -> int:
    return RecoveryCode.objects.filter(user_id=user.pk, used_at__isnull=True).count()

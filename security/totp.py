"""Authenticator apps (TOTP, RFC 6238: 30-second steps, 6 digits, one step of clock drift either way).

A code is accepted once: the device remembers the newest step it accepted and refuses that step and older
ones, so a code read over a shoulder or replayed from a log is worthless. Failures are counted by the
callers (login, step-up), which know the client.
"""

from __future__ import annotations

import hmac
import time
from typing import Any

import pyotp
from django.db import transaction
from django.utils import timezone

from core import keys
from security.models import TotpDevice

ISSUER = "Kassa"
DIGITS = 6
INTERVAL = 30
DRIFT_STEPS = 1


class AlreadyEnrolled(Exception):
    """The user has a confirmed authenticator: disable it before enrolling another."""


def _now() -> float:
    """The clock of the codes (tests move it)."""
    return time.time()


def _step(at: float) -> int:
    return int(at // INTERVAL)


def _otp(secret: str) -> pyotp.TOTP:
    return pyotp.TOTP(secret, digits=DIGITS, interval=INTERVAL)


def _normalise(code: str) -> str:
    return "".join(str(code or "").split())


def has_totp(user: Any) -> bool:
    """The user logs in with an authenticator code (a confirmed device)."""
    if not getattr(user, "is_authenticated", False) or user.pk is None:
        return False
    return TotpDevice.objects.filter(user_id=user.pk, is_confirmed=True).exists()


def device_secret(device: TotpDevice) -> str:
    return keys.decrypt(device.secret_encrypted)


def provisioning_uri(device: TotpDevice, account_name: str) -> str:
    """The otpauth:// URI an authenticator app reads from the QR code."""
    return _otp(device_secret(device)).provisioning_uri(name=account_name, issuer_name=ISSUER)


def _matching_step(device: TotpDevice, code: str) -> int | None:
    """The newest unused step within the drift window whose code is `code`, else None."""
    code = _normalise(code)
    if len(code) != DIGITS or not (code.isascii() and code.isdigit()):  # "٠١٢٣٤٥" is digits too
        return None
    otp = _otp(device_secret(device))
    now = _step(_now())
    found = None
    for step in range(now - DRIFT_STEPS, now + DRIFT_STEPS + 1):
        if hmac.compare_digest(otp.generate_otp(step), code):
            found = step
    if found is None or (device.last_used_step is not None and found <= device.last_used_step):
        return None
    return found


@transaction.atomic
def totp_enrol_start(*, user: Any) -> TotpDevice:
    """The user's pending device, created with a new secret on first call; the same one on reloads of the
    enrolment page, so the app scanned a minute ago still matches."""
    # get_or_create: two first visits at once make one device (the loser reads the winner's row).
    device, _ = TotpDevice.objects.get_or_create(
        user_id=user.pk, defaults={"secret_encrypted": keys.encrypt(pyotp.random_base32())}
    )
    if device.is_confirmed:
        raise AlreadyEnrolled
    return device


@transaction.atomic
def totp_enrol_confirm(*, user: Any, code: str) -> bool:
    """Activate the pending device when `code` comes from it; False (nothing changed) otherwise."""
    device = TotpDevice.objects.select_for_update().filter(user_id=user.pk).first()
    if device is None or device.is_confirmed:
        return False
    step = _matching_step(device, code)
    if step is None:
        return False
    device.is_confirmed = True
    device.confirmed_at = timezone.now()
    device.last_used_step = step
    device.save(update_fields=["is_confirmed", "confirmed_at", "last_used_step"])
    return True


@transaction.atomic
def verify(user: Any, code: str) -> bool:
    """True when `code` is a current code of the user's confirmed device not accepted before; the row lock
    makes two requests with one code accept it once."""
    if user is None or user.pk is None:
        return False
    device = TotpDevice.objects.select_for_update().filter(user_id=user.pk, is_confirmed=True).first()
    if device is None:
        return False
    step = _matching_step(device, code)
    if step is None:
        return False
    device.last_used_step = step
    device.save(update_fields=["last_used_step"])
    return True


@transaction.atomic
def totp_disable(*, user: Any) -> bool:
    """Remove the authenticator and the recovery codes; False when there was none."""
    from security.models import RecoveryCode

    deleted, _ = TotpDevice.objects.filter(user_id=user.pk).delete()
    RecoveryCode.objects.filter(user_id=user.pk).delete()
    return deleted > 0

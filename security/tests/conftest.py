"""Arrangements of the security tests: one clock for codes, freshness, pending logins and idleness."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyotp
import pytest
from django.core.cache import cache

from security import login, middleware, stepup, totp
from tests.dashboard import Dash
from tests.factories import TotpDeviceFactory

START = 1_800_000_000.0  # the start of a 30-second step


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The clock of TOTP steps, step-up freshness, the pending login step and idleness."""
    now = Clock(START)
    for module in (totp, stepup, login, middleware):
        monkeypatch.setattr(module, "_now", now)
    return now


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    cache.clear()  # the failure counters live there
    yield
    cache.clear()


@pytest.fixture
def owner(merchant: Any) -> Any:
    return merchant.company.owner


@pytest.fixture
def device(clock: Clock, owner: Any) -> Any:
    """The owner's confirmed authenticator (`.secret`, `.recovery_codes`)."""
    return TotpDeviceFactory(user=owner)


@pytest.fixture
def dash(merchant: Any) -> Dash:
    client = Dash()
    client.client.force_login(merchant.company.owner)
    return client


@pytest.fixture
def anon_dash(db: Any) -> Dash:
    return Dash()


def code_at(secret: str, at: float) -> str:
    return pyotp.TOTP(secret).at(at)


def wrong_code(secret: str, at: float) -> str:
    """Six digits that are no code of the drift window around `at`."""
    window = {code_at(secret, at + offset) for offset in (-30, 0, 30)}
    return next(code for code in ("000000", "111111", "222222", "333333") if code not in window)

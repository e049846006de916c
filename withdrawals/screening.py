"""Compliance screening (AML/TMS) of a withdrawal before it is broadcast (docs/api.md: rejected).

The `WITHDRAWAL_SCREEN` setting names the class (dotted path). The default, `DenyListScreen`, refuses the
addresses of the `WITHDRAWAL_DENY_ADDRESSES` setting and allows everything else (so with an empty list it
allows all). A deployment plugs in a real provider by implementing `ComplianceScreen`:

    class ChainalysisScreen:
        def screen(self, withdrawal: Withdrawal) -> tuple[bool, str]:
            ...  # (allowed, reason shown in the dashboard when refused)
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.utils.module_loading import import_string

if TYPE_CHECKING:
    from withdrawals.models import Withdrawal


class ComplianceScreen(Protocol):
    def screen(self, withdrawal: Withdrawal) -> tuple[bool, str]:
        """(allowed, reason). Runs in the broadcast's transaction, with the withdrawal row locked."""
        ...


class AllowAllScreen:
    def screen(self, withdrawal: Withdrawal) -> tuple[bool, str]:
        return True, ""


class DenyListScreen:
    """Refuses the addresses listed in WITHDRAWAL_DENY_ADDRESSES, compared case-insensitively.

    Case-insensitive on purpose: hex and bech32 addresses are case-insensitive, and for a deny list a
    false refusal of a case-variant (which would hardly be a valid address anyway) beats a miss.
    """

    def screen(self, withdrawal: Withdrawal) -> tuple[bool, str]:
        denied = {address.strip().lower() for address in settings.WITHDRAWAL_DENY_ADDRESSES}
        if withdrawal.to_address.strip().lower() in denied:
            return False, "The receiver address is on the deny list."
        return True, ""


@cache
def get_screen() -> ComplianceScreen:
    path = settings.WITHDRAWAL_SCREEN
    try:
        screen = import_string(path)()
    except ImportError as exc:
        raise ImproperlyConfigured(f"WITHDRAWAL_SCREEN: cannot load {path!r}") from exc
    if not callable(getattr(screen, "screen", None)):
        raise ImproperlyConfigured(f"WITHDRAWAL_SCREEN: {path!r} has no screen(withdrawal) method")
    return screen  # type: ignore[no-any-return]


def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting == "WITHDRAWAL_SCREEN":
        get_screen.cache_clear()


setting_changed.connect(_reset)

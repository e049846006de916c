"""Who is mailed about what: each member's choice, or their role's defaults; the company's receipt switch.

Defaults (docs/dashboard.md#notifications): owners and admins get every kind; finance the money that needs
them (invoices needing a decision, withdrawals done, rejected or held, reversed deposits), not every paid
invoice; developers new API tokens; everyone a log-in to their own account from a new device.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import transaction

from core.errors import FieldError, ValidationFailed
from notifications.models import MEMBER_KINDS, CompanySettings, Kind, Preference
from payments.models import Company, Membership
from payments.roles import ADMIN, DEVELOPER, FINANCE, OWNER, VIEWER

DEFAULT_KINDS: dict[str, frozenset[str]] = {
    OWNER: frozenset(MEMBER_KINDS),
    ADMIN: frozenset(MEMBER_KINDS),
    FINANCE: frozenset(
        {
            Kind.INVOICE_DECISION,
            Kind.WITHDRAWAL_DONE,
            Kind.WITHDRAWAL_REJECTED,
            Kind.WITHDRAWAL_HELD,
            Kind.DEPOSIT_REVERSED,
            Kind.NEW_DEVICE,
        }
    ),
    DEVELOPER: frozenset({Kind.TOKEN_CREATED, Kind.NEW_DEVICE}),
    VIEWER: frozenset({Kind.NEW_DEVICE}),
}


def _languages() -> set[str]:
    return {code for code, _ in settings.LANGUAGES}


def language_or_default(language: str | None) -> str:
    return language if language in _languages() else settings.LANGUAGE_CODE


def preference_get(*, user: Any, role: str) -> tuple[frozenset[str], str]:
    """The kinds `user` is mailed about and the language of their mail."""
    pref = Preference.objects.filter(user=user).first()
    if pref is None:
        return DEFAULT_KINDS.get(role, frozenset()), settings.LANGUAGE_CODE
    return frozenset(pref.kinds), language_or_default(pref.language)


def preference_set(*, user: Any, kinds: Iterable[str], language: str) -> Preference:
    chosen = sorted(set(kinds))
    unknown = [kind for kind in chosen if kind not in MEMBER_KINDS]
    errors = [FieldError("kinds", "invalid", f"No such notification: {kind}") for kind in unknown]
    if language not in _languages():
        errors.append(FieldError("language", "invalid", f"No such language: {language}"))
    if errors:
        raise ValidationFailed(errors)
    pref, _ = Preference.objects.update_or_create(user=user, defaults={"kinds": chosen, "language": language})
    return pref


def recipients(*, company_id: Any, kind: str, user_id: Any = None) -> list[tuple[str, str]]:
    """(e-mail, language) of the active members of the company who want `kind` (only `user_id`'s own when
    given: a log-in concerns one person)."""
    members = Membership.objects.filter(company_id=company_id, user__is_active=True).select_related("user")
    if user_id is not None:
        members = members.filter(user_id=user_id)
    prefs = {p.user_id: p for p in Preference.objects.filter(user__membership__in=members)}
    found = []
    for member in members.order_by("pk"):
        pref = prefs.get(member.user_id)
        kinds = frozenset(pref.kinds) if pref else DEFAULT_KINDS.get(member.role, frozenset())
        if kind in kinds and member.user.email:
            found.append((member.user.email, language_or_default(pref.language if pref else None)))
    return found


def receipts_enabled(*, company_id: Any) -> bool:
    """The pay page promises a receipt, and one is sent, only when this is on (and e-mail is)."""
    if not settings.EMAIL_ENABLED:
        return False
    return CompanySettings.objects.filter(company_id=company_id, receipts_enabled=True).exists()


@transaction.atomic
def receipts_set(*, company: Company, enabled: bool) -> CompanySettings:
    row, _ = CompanySettings.objects.update_or_create(company=company, defaults={"receipts_enabled": enabled})
    return row

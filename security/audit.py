"""The audit log: one row per security-relevant action in a company's account (who, what, when, where).

Rows are written in the caller's transaction, so an action that rolls back leaves no trace of having
happened. `detail` is short free text for people and never carries a secret.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from django.db import transaction
from django.http import HttpRequest

from core.throttle import client_ip
from payments.models import Company
from payments.services import company_rotate_token
from security.models import AuditEvent

_DETAIL_MAX = AuditEvent._meta.get_field("detail").max_length or 255
_AGENT_MAX = AuditEvent._meta.get_field("user_agent").max_length or 255
_ACTION_MAX = AuditEvent._meta.get_field("action").max_length or 64


def _ip(request: HttpRequest) -> str | None:
    """The client address, or None when what the proxy chain says is not an address at all."""
    raw = client_ip(request).strip()
    try:
        return str(ipaddress.ip_address(raw))
    except ValueError:
        return None


def _user(request: HttpRequest | None, user: Any) -> Any:
    if user is not None:
        return user
    candidate = getattr(request, "user", None)
    return candidate if getattr(candidate, "is_authenticated", False) else None


def audit_record(
    request: HttpRequest | None, *, company: Company, action: str, detail: str = "", user: Any = None
) -> AuditEvent:
    """Record `action` in `company`'s log; `request` None is the command line (no address, no agent).
    `user` defaults to the request's logged-in user (a failed login names the account it tried)."""
    return AuditEvent.objects.create(
        company=company,
        user=_user(request, user),
        action=action[:_ACTION_MAX],
        detail=(detail or "")[:_DETAIL_MAX],
        ip=_ip(request) if request is not None else None,
        user_agent=str(request.META.get("HTTP_USER_AGENT", ""))[:_AGENT_MAX] if request is not None else "",
    )


def company_of(user: Any) -> Company | None:
    """The company a dashboard user is a member of (one per user), if any."""
    if user is None or getattr(user, "pk", None) is None:
        return None
    return Company.objects.filter(members__user_id=user.pk).first()


def audit_user(request: HttpRequest | None, user: Any, action: str, detail: str = "") -> AuditEvent | None:
    """Record `action` for the company `user` is a member of; nothing for a user without one (staff,
    unknown)."""
    company = company_of(user)
    if company is None:
        return None
    return audit_record(request, company=company, action=action, detail=detail, user=user)


def token_rotate_audited(request: HttpRequest | None, *, company: Company, how: str = "") -> str:
    """A new public token for `company` (the old one stops working at commit), recorded in its log in the
    same transaction with the prefix the dashboard shows anyway, never the token; `how` says by what (the
    command line). Returns the new token."""
    with transaction.atomic():
        token = company_rotate_token(company_id=company.pk)
        company.refresh_from_db(fields=["token_prefix"])
        detail = f"new token {company.token_prefix}…" + (f" {how}" if how else "")
        audit_record(request, company=company, action="token.rotate", detail=detail)
    return token

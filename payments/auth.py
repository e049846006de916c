"""Who calls the API and what they may do (docs/api.md, docs/security.md): the credential an authenticated
call carries, the scope each view declares for each method, and the API_TOKEN_RATE setting. The Bearer
authentication and the budget throttle themselves are in payments.api.authentication."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, register
from rest_framework import exceptions
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from core.checks import TAG
from payments.models import Company
from payments.tokens import ALL_SCOPES


@dataclass(frozen=True)
class ApiCredential:
    """What `request.auth` holds for an authenticated API call."""

    company: Company
    token_id: int | None = None  # None: the company's own token, which holds every scope
    token_name: str = ""
    scopes: frozenset[str] = ALL_SCOPES
    created_by_id: int | None = None  # the member who made the named token (None: the company, or unknown)

    @property
    def is_company_token(self) -> bool:
        return self.token_id is None

    @property
    def budget_key(self) -> str:
        return f"company:{self.company.pk}" if self.token_id is None else f"token:{self.token_id}"


# --- Scopes ---------------------------------------------------------------------------------------------


def required_scope(view: Any, method: str) -> str | None:
    """The scope `view` declares for `method` (HEAD is GET); None when the view has no handler for it (the
    405 or the OPTIONS answer follows) and "" when it has one but declares nothing (refused)."""
    method = "GET" if method.upper() == "HEAD" else method.upper()
    scope = getattr(view, "required_scopes", {}).get(method)
    if scope:
        return str(scope)
    if method == "OPTIONS" or not hasattr(view, method.lower()):
        return None
    return ""


class IsMerchant(BasePermission):
    """An authenticated API call whose token holds the scope the view declares for this method in
    `required_scopes` (e.g. `{"GET": "invoices:read", "POST": "invoices:write"}`)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        credential = request.auth
        if not isinstance(credential, ApiCredential):
            return False
        if credential.is_company_token:
            return True  # every scope, and nothing to look up
        scope = required_scope(view, request.method or "GET")
        if scope is None:
            return True
        if not scope:
            raise exceptions.PermissionDenied(
                f"{request.method} here declares no scope; no named token may call it."
            )
        if scope not in credential.scopes:
            raise exceptions.PermissionDenied(
                f"This token lacks the scope '{scope}' that this request needs."
            )
        return True


class SandboxEnabled(BasePermission):
    """Listed before IsMerchant on the sandbox endpoints: with the sandbox off they do not exist (404), for
    anonymous callers too."""

    def has_permission(self, request: Request, view: Any) -> bool:
        from core.offer import sandbox_enabled

        if not sandbox_enabled():
            raise exceptions.NotFound("No endpoint here: the sandbox is not enabled on this deployment.")
        return True


SANDBOX_API_PERMISSIONS = [SandboxEnabled, IsMerchant]


def current_company(request: Request) -> Company:
    """The company of an authenticated API call (views behind `IsMerchant`)."""
    credential = request.auth
    if not isinstance(credential, ApiCredential):
        raise exceptions.NotAuthenticated()
    return credential.company


# --- Per-token budget ------------------------------------------------------------------------------------

_PERIODS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600}
_PERIODS.update({"d": 86400, "day": 86400})


@lru_cache(maxsize=8)
def parse_rate(text: str) -> tuple[int, int] | None:
    """ "600/min" -> (600, 60); "" -> None (no limit). ValueError for anything else."""
    text = text.strip()
    if not text:
        return None
    number, _, period = text.partition("/")
    seconds = _PERIODS.get(period.strip().lower())
    if not number.strip().isdigit() or int(number) < 1 or seconds is None:
        raise ValueError(f"{text!r} is not a rate: write requests/period, e.g. 600/min (s, min, hour, day).")
    return int(number), seconds


@register(TAG, deploy=True)
def check_api_token_rate(**kwargs: Any) -> list[CheckMessage]:
    try:
        parse_rate(getattr(settings, "API_TOKEN_RATE", "") or "")
    except ValueError as exc:
        return [Error(str(exc), hint="Set API_TOKEN_RATE like 600/min, or empty for none.", id="kassa.E031")]
    return []

"""The API's Bearer-token authentication and per-token request budget (docs/api.md, docs/security.md).

`Authorization: Bearer <token>`: the company's own token (`kassa_pk_...`, every scope) or a named token
(`kassa_tk_...`, its scopes, optionally only from its networks). The scopes are checked by
payments.auth.IsMerchant; the budget by ApiTokenThrottle, a default throttle of the API.
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from core.budgets import budget_take
from core.throttle import client_ip
from payments.auth import ApiCredential, parse_rate
from payments.selectors import api_token_get_by_token, company_get_by_token
from payments.tokens import SCOPED_TOKEN_PREFIX, api_token_touch, company_token_touch, network_allows


class BearerTokenAuthentication(BaseAuthentication):
    # Django upper-cases header names into META, so `authorization:` in lowercase arrives here as well.
    def authenticate(self, request: Request) -> tuple[Any, ApiCredential] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header.strip():
            return None
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or " " in token:
            raise exceptions.AuthenticationFailed("Send the public token as 'Authorization: Bearer <token>'.")
        # One query either way: the prefix says which table holds the token.
        credential = (
            _named_token(request, token) if token.startswith(SCOPED_TOKEN_PREFIX) else _company(token)
        )
        return credential.company.owner, credential

    def authenticate_header(self, request: Request) -> str:
        # Non-empty, so DRF answers 401 (not 403) when credentials are missing.
        return 'Bearer realm="api"'


def _company(token: str) -> ApiCredential:
    company = company_get_by_token(token)
    if company is None:
        raise exceptions.AuthenticationFailed("Unknown or revoked token.")
    company_token_touch(company)
    return ApiCredential(company=company)


def _named_token(request: Request, token: str) -> ApiCredential:
    found = api_token_get_by_token(token)
    if found is None:
        raise exceptions.AuthenticationFailed("Unknown or revoked token.")
    if found.allowed_networks:
        ip = client_ip(request)
        if not network_allows(found.allowed_networks, ip):
            # 403, not 401: the token is right, the place it is used from is not. Checked before the
            # "last used" stamp, so a leaked token tried from elsewhere does not look used.
            where = ip[:64] or "an unknown address"
            raise exceptions.PermissionDenied(f"This token may not be used from {where}.")
    api_token_touch(found)
    return ApiCredential(
        company=found.company,
        token_id=found.pk,
        token_name=found.name,
        scopes=frozenset(found.scopes),
        created_by_id=found.created_by_id,
    )


def _clock() -> float:
    """The clock of the budget windows (tests move it)."""
    return time.time()


class ApiTokenThrottle(BaseThrottle):
    """API_TOKEN_RATE per token (the company's own token: per company), a budget in fixed windows counted
    in the shared cache across processes (core.budgets). A default throttle of the API, so a view has
    it unless it names its own throttles (the public invoice endpoints)."""

    window_end = 0.0
    now = 0.0

    def allow_request(self, request: Request, view: Any) -> bool:
        credential = request.auth
        if not isinstance(credential, ApiCredential):
            return True
        rate = parse_rate(settings.API_TOKEN_RATE or "")
        if rate is None:
            return True
        limit, seconds = rate
        self.now = _clock()
        allowed, self.window_end = budget_take(
            f"api-budget:{credential.budget_key}", limit, seconds, now=self.now, name="api_token"
        )
        return allowed

    def wait(self) -> float:
        return max(1.0, self.window_end - self.now)

"""Bearer-token authentication for the API (docs/api.md): `Authorization: Bearer <public token>`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from payments.models import Company
from payments.selectors import company_get_by_token


@dataclass(frozen=True)
class ApiCredential:
    """What `request.auth` holds for an authenticated API call."""

    company: Company


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
        company = company_get_by_token(token)
        if company is None:
            raise exceptions.AuthenticationFailed("Unknown or revoked token.")
        return company.owner, ApiCredential(company=company)

    def authenticate_header(self, request: Request) -> str:
        # Non-empty, so DRF answers 401 (not 403) when credentials are missing.
        return 'Bearer realm="api"'


class IsMerchant(BasePermission):
    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.auth, ApiCredential)


class SandboxEnabled(BasePermission):
    """Listed before IsMerchant on the sandbox endpoints: with the sandbox off they do not exist (404), for
    anonymous callers too."""

    def has_permission(self, request: Request, view: Any) -> bool:
        from chains.base import sandbox_enabled

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

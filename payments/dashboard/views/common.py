"""What every dashboard view shares: the merchant guard, one-time session values, pagination."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, Concatenate, ParamSpec

from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponseBase
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache

from core.keyset import KeysetPage, keyset_page, parse_position
from payments.models import Company, Membership
from payments.roles import ROLE_LABELS, may, route_permission

P = ParamSpec("P")
MerchantView = Callable[Concatenate[HttpRequest, Company, P], HttpResponseBase]
AccountView = Callable[Concatenate[HttpRequest, Company | None, P], HttpResponseBase]

PAGE_SIZE = 25
_ONCE = "dashboard:once"  # session key: values shown exactly once (new tokens and secrets)


def account_view(view: AccountView[P]) -> Callable[Concatenate[HttpRequest, P], HttpResponseBase]:
    """Logged in, with or without a company: pages about the user's own account (2FA, confirming it is
    them), which an operator's account without a company needs as well. The view receives the user's company
    or None."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: P.args, **kwargs: P.kwargs) -> HttpResponseBase:
        membership = Membership.objects.filter(user=request.user).select_related("company").first()  # type: ignore[misc]
        request.member_role = membership.role if membership else None  # type: ignore[attr-defined]
        return view(request, membership.company if membership else None, *args, **kwargs)

    return never_cache(login_required(wrapped))  # type: ignore[return-value]


def merchant_view(view: MerchantView[P]) -> Callable[Concatenate[HttpRequest, P], HttpResponseBase]:
    """`account_view` with a company; the view receives that company and scopes every query by it.

    never_cache: pages carry balances and, once, credentials; no shared cache or back button may keep them.
    """

    @wraps(view)
    def wrapped(
        request: HttpRequest, company: Company | None, *args: P.args, **kwargs: P.kwargs
    ) -> HttpResponseBase:
        if company is None:
            if request.user.is_staff:
                # An operator's account: its pages are the alerts and the chain status, not a merchant's.
                return redirect("dashboard:alerts")
            return render(request, "dashboard/no_company.html", status=403)
        route = request.resolver_match.view_name if request.resolver_match else ""
        needed = route_permission(route, request.method or "GET")
        role = getattr(request, "member_role", None) or ""
        if needed is None or not may(role, needed):
            # Default deny: a route the role table does not name is nobody's (payments.roles).
            return render(
                request,
                "dashboard/not_for_role.html",
                {"company": company, "role": ROLE_LABELS.get(role, role), "needed": needed or "?"},
                status=403,
            )
        return view(request, company, *args, **kwargs)

    wrapped.merchant_route = True  # type: ignore[attr-defined]  # what tests/test_roles.py walks
    return account_view(wrapped)


def show_once(request: HttpRequest, name: str, value: Any) -> None:
    """Keep `value` for the next page only (the redirect target pops it)."""
    once = dict(request.session.get(_ONCE, {}))
    once[name] = value
    request.session[_ONCE] = once


def pop_once(request: HttpRequest, name: str) -> Any:
    once = dict(request.session.get(_ONCE, {}))
    value = once.pop(name, None)
    if value is not None:
        request.session[_ONCE] = once
    return value


def paginate(request: HttpRequest, items: QuerySet[Any], per_page: int = PAGE_SIZE) -> KeysetPage[Any]:
    """A keyset page of `items` (newest first by created_at, pk) from `?after=`: any depth costs the same.
    A position that is not one (edited by hand) shows the newest page rather than an error."""
    after = request.GET.get("after") or ""
    position = parse_position(after, items.model) if after else None
    return keyset_page(items, after=position, size=per_page)

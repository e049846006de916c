"""Every dashboard route and action, walked as a member of each role: each role reaches exactly what the
role table says (payments.roles, the table of docs/dashboard.md), and a merchant route the table does not
name is refused to everyone. Reached means the guard let it through (the page, a redirect, a form error,
a 404 for an object that does not exist); refused means the "not for your role" page, and nothing done."""

from __future__ import annotations

import re
import uuid

import pytest
from django.urls import Resolver404, URLPattern, URLResolver, get_resolver, resolve

from payments.roles import PERMISSIONS, ROLES, ROUTES, may, route_permission
from tests.chain import fund
from tests.factories import (
    CompanyFactory,
    InvoiceFactory,
    MemberFactory,
    PayoutPolicyFactory,
    TotpDeviceFactory,
    WithdrawalFactory,
)
from webhooks.models import WebhookEvent

ARGS = {  # a value for each URL parameter: the guard decides before any object is looked up
    "invoice_id": str(uuid.uuid4()),
    "event_id": str(uuid.uuid4()),
    "uid": "001-1",
    "code": "btc",
    "token_id": "1",
    "address_id": "1",
    "token": "x" * 20,
    "member_id": "1",
    "invitation_id": str(uuid.uuid4()),
}


def _merchant_routes() -> dict[str, URLPattern]:
    """Every dashboard URL whose view is behind the merchant guard, by its name."""
    found: dict[str, URLPattern] = {}

    def walk(patterns: list[URLPattern | URLResolver], namespace: str) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, pattern.namespace or namespace)
            elif getattr(pattern.callback, "merchant_route", False):
                found[f"{namespace}:{pattern.name}"] = pattern

    walk(get_resolver().url_patterns, "")
    return found


def _path(route: str) -> str:
    from django.urls import reverse

    pattern = _merchant_routes()[route]
    names = list(pattern.pattern.regex.groupindex)
    return reverse(route, kwargs={name: ARGS[name] for name in names})


def test_every_merchant_route_is_in_the_role_table():
    routes = set(_merchant_routes())

    assert routes - set(ROUTES) == set(), "a merchant page no role table names: nobody may open it"
    assert set(ROUTES) - routes == set(), "the role table names a route that does not exist"


def test_an_owner_may_do_everything_and_a_viewer_only_read():
    assert PERMISSIONS["owner"] >= {needed for pair in ROUTES.values() for needed in pair}
    assert {
        needed for route in ROUTES if (needed := route_permission(route, "POST")) and may("viewer", needed)
    } == {"read"}


@pytest.mark.parametrize("role", ROLES)
def test_each_role_reaches_exactly_what_the_table_says(client, db, role):
    company = CompanyFactory()
    member = MemberFactory(company=company, role=role) if role != "owner" else company.members.get()
    client.force_login(member.user)
    wrong, served = [], set()
    for route in sorted(ROUTES):
        path = _path(route)
        for method in ("GET", "POST"):
            response = client.get(path) if method == "GET" else client.post(path, {})
            if response.status_code == 405:
                continue  # the route does not serve this method (an action is a POST): nothing done
            served.add(route)
            refused = response.status_code == 403 and "dashboard/not_for_role.html" in [
                t.name for t in response.templates
            ]
            allowed = may(role, route_permission(route, method) or "")
            if refused == allowed:
                wrong.append(f"{method} {route}: {'refused' if refused else 'reached'}")
    assert wrong == [], "\n".join(wrong)
    assert served == set(ROUTES)


@pytest.mark.parametrize("role", ROLES)
def test_each_role_is_offered_only_what_it_may_reach(client, db, role):
    """Every page a member can open links and posts only to what the member's role reaches: no button that
    leads to "Not for your role"."""
    company = CompanyFactory()
    member = MemberFactory(company=company, role=role) if role != "owner" else company.members.get()
    client.force_login(member.user)
    # Pages of real objects too, where the actions are: an invoice paid short (accept or refund), a
    # withdrawal held for approval (approve or cancel), a webhook event (redeliver).
    TotpDeviceFactory(user=company.owner)
    PayoutPolicyFactory(company=company, limits={"btc": {"approval_above": "0.0001"}})
    fund(company, "btc", "1")
    short = InvoiceFactory(company=company, code="btc", total="10", paid="0.00001")
    held = WithdrawalFactory(company=company, asset="btc", amount="0.001")
    event = WebhookEvent.objects.filter(company=company).first()
    assert short.status == "wrong" and held.approval_required and event is not None
    pages = [(route, _path(route)) for route in sorted(ROUTES)] + [
        ("dashboard:invoice_detail", f"/dashboard/invoices/{short.pk}/"),
        ("dashboard:withdrawal_detail", f"/dashboard/withdrawals/{held.uid}/"),
        ("dashboard:event_detail", f"/dashboard/webhooks/{event.pk}/"),
    ]
    offered = []
    for route, path in pages:
        if not may(role, route_permission(route, "GET") or ""):
            continue
        response = client.get(path)
        if response.status_code != 200 or "text/html" not in response.get("Content-Type", ""):
            continue
        page = response.content.decode()
        for kind, target in re.findall(r'<(a|form)\b[^>]*?(?:href|action)="(/dashboard/[^"#?]*)', page):
            try:
                match = resolve(target)
            except Resolver404:
                continue
            name = f"{match.namespace}:{match.url_name}"
            method = "POST" if kind == "form" else "GET"
            needed = route_permission(name, method)
            if needed is not None and not may(role, needed):
                offered.append(f"{route} offers {method} {name}")
    assert sorted(set(offered)) == [], "\n".join(sorted(set(offered)))

"""API tokens: the company's own token and its named, scoped tokens; create (shown once) and revoke."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.dashboard.forms.tokens import ApiTokenForm
from core.errors import NotFound, ValidationFailed
from payments.dashboard.forms.base import add_field_errors
from payments.dashboard.views.common import merchant_view, pop_once, show_once
from payments.models import ApiToken, Company
from payments.roles import ROLE_LABELS, token_scopes
from payments.selectors import api_token_list_for_company
from payments.tokens import api_token_create, api_token_describe, api_token_revoke
from security.audit import audit_record
from security.dashboard.step_up import step_up_required

NEW_API_TOKEN = "api_token"  # noqa: S105 - a session key name, not a secret


def _form(request: HttpRequest, data: Any = None) -> ApiTokenForm:
    """Only the scopes the member's role may hand out (payments.roles.token_scopes)."""
    role = str(getattr(request, "member_role", "") or "")
    return ApiTokenForm(data, allowed=token_scopes(role), role=ROLE_LABELS.get(role, role))


def _with_creators(tokens: list[ApiToken]) -> list[ApiToken]:
    """Each token's `creator` e-mail ("" for the company's own or a command-line token), in one query."""
    ids = {token.created_by_id for token in tokens if token.created_by_id}
    emails = dict(get_user_model()._default_manager.filter(pk__in=ids).values_list("pk", "email"))
    for token in tokens:
        token.creator = emails.get(token.created_by_id or 0, "")  # type: ignore[attr-defined]
    return tokens


def _page(request: HttpRequest, company: Company, form: ApiTokenForm | None = None) -> HttpResponse:
    context: dict[str, Any] = {
        "company": company,
        "nav": "api",
        "tokens": _with_creators(api_token_list_for_company(company=company)),
        "form": form or _form(request),
        "new_token": pop_once(request, NEW_API_TOKEN),
    }
    return render(request, "accounts/api_tokens.html", context)


@merchant_view
def api_tokens(request: HttpRequest, company: Company) -> HttpResponse:
    return _page(request, company)


# Creating and revoking need a fresh step-up (a copied session cookie alone is not enough) and are
# audited in the same transaction as the change.


@require_POST
@merchant_view
@step_up_required
def api_token_new(request: HttpRequest, company: Company) -> HttpResponse:
    form = _form(request, request.POST)
    if form.is_valid():
        spec = form.cleaned_data["spec"]
        try:
            with transaction.atomic():
                issued = api_token_create(
                    company_id=company.pk,
                    name=spec.name,
                    scopes=spec.scopes,
                    allowed_networks=spec.allowed_networks,
                    created_by=request.user,
                )
                audit_record(
                    request, company=company, action="token.create", detail=api_token_describe(issued.token)
                )
        except ValidationFailed as exc:
            add_field_errors(form, exc.errors, {})
        else:
            show_once(request, NEW_API_TOKEN, {"name": issued.token.name, "secret": issued.secret})
            messages.success(request, f"The token “{issued.token.name}” was created.")
            return redirect("dashboard:api_tokens")
    return _page(request, company, form)


@require_POST
@merchant_view
@step_up_required
def api_token_revoke_view(request: HttpRequest, company: Company, token_id: int) -> HttpResponse:
    try:
        with transaction.atomic():
            token, revoked = api_token_revoke(company_id=company.pk, token_id=token_id)
            if revoked:
                audit_record(
                    request, company=company, action="token.revoke", detail=api_token_describe(token)
                )
    except NotFound as exc:
        raise Http404("No such token.") from exc
    if revoked:
        messages.success(request, f"The token “{token.name}” was revoked. It no longer works.")
    return redirect("dashboard:api_tokens")

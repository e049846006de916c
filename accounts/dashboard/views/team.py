"""The team: members with their roles, open invitations, invite, change a role, remove (with a confirmation
page), revoke an invitation; and the public page an invitation's link opens. Every change is audited
(accounts.team); changes that touch an owner or an admin need a fresh step-up."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode
from uuid import UUID

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model, login, logout
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from accounts.dashboard.forms.team import AcceptSignupForm, InviteForm, RoleForm, role_choices
from accounts.team import (
    team_accept,
    team_invite,
    team_invite_revoke,
    team_remove,
    team_set_role,
    tokens_made_by,
)
from core.errors import DomainError, NotFound, ValidationFailed
from payments.dashboard.forms.base import add_field_errors
from payments.dashboard.views.common import merchant_view
from payments.members import (
    InvitationClosed,
    invitation_get_by_token,
    invitation_list_open,
    invitation_state,
    member_list_for_company,
)
from payments.models import Company, Membership
from payments.roles import ADMIN, OWNER, ROLE_LABELS
from security.audit import audit_user
from security.dashboard.step_up import step_up_required

_GUARDED = frozenset({OWNER, ADMIN})  # roles whose changes need a fresh step-up


def _role(request: HttpRequest) -> str:
    return str(getattr(request, "member_role", "") or "")


def _page(
    request: HttpRequest, company: Company, form: InviteForm | None = None, status: int = 200
) -> HttpResponse:
    actor = _role(request)
    members = list(member_list_for_company(company=company))
    context: dict[str, Any] = {
        "company": company,
        "nav": "team",
        "members": members,
        # The last owner is offered no role change and no removal: the server would refuse both.
        "sole_owner": sum(member.role == OWNER for member in members) == 1,
        "invitations": invitation_list_open(company=company),
        "form": form or InviteForm(actor_role=actor),
        "role_choices": role_choices(actor),
        "role_labels": ROLE_LABELS,
        "is_owner": actor == OWNER,
        "mail_enabled": settings.EMAIL_ENABLED,
    }
    return render(request, "dashboard/team/team.html", context, status=status)


def _member_or_404(company: Company, member_id: int) -> Membership:
    member = Membership.objects.select_related("user").filter(company=company, pk=member_id).first()
    if member is None:
        raise Http404("No such member.")
    return member


@merchant_view
def team(request: HttpRequest, company: Company) -> HttpResponse:
    return _page(request, company)


@require_POST
@merchant_view
def team_invite_view(request: HttpRequest, company: Company) -> HttpResponse:
    form = InviteForm(request.POST, actor_role=_role(request))
    if form.is_valid():
        try:
            invitation = team_invite(
                request,
                company=company,
                email=form.cleaned_data["email"],
                role=form.cleaned_data["role"],
                actor_role=_role(request),
            )
        except ValidationFailed as exc:
            add_field_errors(form, exc.errors, {})
        except DomainError as exc:
            form.add_error(None, exc.detail)
        else:
            sent = "An invitation was sent to" if settings.EMAIL_ENABLED else "Mail is off: no mail went to"
            messages.success(request, f"{sent} {invitation.email}; the link works for 7 days, once.")
            return redirect("dashboard:team")
    return _page(request, company, form, status=400)


def _change_role(request: HttpRequest, company: Company, member_id: int) -> HttpResponse:
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose one of the roles.")
        return redirect("dashboard:team")
    try:
        member, before = team_set_role(
            request,
            company=company,
            member_id=member_id,
            role=form.cleaned_data["role"],
            actor_role=_role(request),
        )
    except NotFound as exc:
        raise Http404(exc.detail) from exc
    except DomainError as exc:
        messages.error(request, exc.detail)
    else:
        if before != member.role:
            messages.success(request, f"{member.user.email} is now {ROLE_LABELS[member.role]}.")
    return redirect("dashboard:team")


_change_role_confirmed = step_up_required(_change_role)


@require_POST
@merchant_view
def team_role(request: HttpRequest, company: Company, member_id: int) -> HttpResponseBase:
    member = _member_or_404(company, member_id)
    if {member.role, request.POST.get("role", "")} & _GUARDED:
        return _change_role_confirmed(request, company, member_id)  # type: ignore[no-any-return]
    return _change_role(request, company, member_id)


def _remove(request: HttpRequest, company: Company, member_id: int) -> HttpResponse:
    try:
        member = team_remove(request, company=company, member_id=member_id, actor_role=_role(request))
    except NotFound as exc:
        raise Http404(exc.detail) from exc
    except DomainError as exc:
        messages.error(request, exc.detail)
        return redirect("dashboard:team")
    if member.user_id == request.user.pk:  # they removed themselves: their own session is gone too
        logout(request)
        return redirect("dashboard:login")
    messages.success(request, f"{member.user.email} was removed and logged out.")
    return redirect("dashboard:team")


_remove_confirmed = step_up_required(_remove)


@require_http_methods(["GET", "POST"])
@merchant_view
def team_remove_view(request: HttpRequest, company: Company, member_id: int) -> HttpResponseBase:
    member = _member_or_404(company, member_id)
    if request.method == "POST":
        if member.role in _GUARDED:
            return _remove_confirmed(request, company, member_id)  # type: ignore[no-any-return]
        return _remove(request, company, member_id)
    context = {
        "company": company,
        "nav": "team",
        "member": member,
        "role": ROLE_LABELS.get(member.role, member.role),
        "tokens": tokens_made_by(company, member.user),
        "may": member.role != OWNER or _role(request) == OWNER,
    }
    return render(request, "dashboard/team/remove.html", context)


@require_POST
@merchant_view
def team_invite_revoke_view(request: HttpRequest, company: Company, invitation_id: UUID) -> HttpResponse:
    try:
        invitation, revoked = team_invite_revoke(
            request, company=company, invitation_id=invitation_id, actor_role=_role(request)
        )
    except NotFound as exc:
        raise Http404(exc.detail) from exc
    except DomainError as exc:
        messages.error(request, exc.detail)
        return redirect("dashboard:team")
    if revoked:
        messages.success(
            request, f"The invitation of {invitation.email} was revoked; its link does nothing now."
        )
    return redirect("dashboard:team")


# --- The invitation's link (public) ---------------------------------------------------------------------


def _closed(request: HttpRequest, reason: str) -> HttpResponse:
    return render(request, "dashboard/team/accept_closed.html", {"reason": reason}, status=410)


@never_cache
@require_http_methods(["GET", "POST"])
def team_accept_view(request: HttpRequest, token: str) -> HttpResponse:
    """Sign up (a new address: a password, twice) or, logged in as the invited address, accept."""
    invitation = invitation_get_by_token(token)
    state = invitation_state(invitation) if invitation is not None else "invalid"
    if invitation is None or state != "open":
        return _closed(request, state)
    user = request.user if request.user.is_authenticated else None
    has_account = get_user_model()._default_manager.filter(email__iexact=invitation.email).exists()
    if user is not None and (user.email or "").lower() == invitation.email.lower():
        mode = "member" if Membership.objects.filter(user=user).exists() else "accept"
    else:
        mode = "login" if has_account or user is not None else "signup"
    form = AcceptSignupForm(
        request.POST if mode == "signup" and request.method == "POST" else None, email=invitation.email
    )
    error = ""
    if request.method == "POST" and (mode == "accept" or (mode == "signup" and form.is_valid())):
        try:
            if mode == "accept":
                team_accept(request, token=token, user=user)
            else:
                member = team_accept(request, token=token, password=form.cleaned_data["password1"])
                login(request, member.user, backend="django.contrib.auth.backends.ModelBackend")
                audit_user(request, member.user, "login.success", "after accepting an invitation")
        except InvitationClosed:
            return _closed(request, "used")
        except DomainError as exc:
            error = exc.detail
        else:
            messages.success(request, f"Welcome to {invitation.company.name}.")
            return redirect("dashboard:overview")
    login_url = reverse("dashboard:login") + "?" + urlencode({"next": request.path})
    context = {
        "invitation": invitation,
        "role": ROLE_LABELS.get(invitation.role, invitation.role),
        "mode": mode,
        "form": form,
        "error": error,
        "login_url": login_url,
    }
    status = 400 if request.method == "POST" else 200
    return render(request, "dashboard/team/accept.html", context, status=status)

"""The team's changes as the dashboard and the API make them: each payments.members transition with its
audit row in the same transaction, the invitation mail after commit, and a removed member's sessions ended.

One road for both edges (accounts/dashboard/views/team.py, accounts/api/members.py). The audit detail
names the member's e-mail and roles, never a token.
"""

from __future__ import annotations

import logging
import smtplib
from typing import Any
from uuid import UUID

from django.conf import settings
from django.contrib.sessions.models import Session
from django.core.mail import EmailMessage
from django.db import transaction
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from payments.members import (
    IssuedInvitation,
    invitation_accept,
    invitation_create,
    invitation_revoke,
    member_describe,
    member_remove,
    member_set_role,
)
from payments.models import ApiToken, Company, Invitation, Membership
from payments.roles import ROLE_LABELS
from security.audit import audit_record

logger = logging.getLogger("kassa.team")


def invite_link(token: str) -> str:
    return f"{settings.BASE_URL}{reverse('dashboard:team_accept', kwargs={'token': token})}"


def _mail_invitation(issued: IssuedInvitation, inviter_email: str) -> None:
    if not settings.EMAIL_ENABLED:
        return  # EMAIL_URL=off: the page says so; nothing leaves
    invitation = issued.invitation
    context: dict[str, Any] = {
        "company": invitation.company.name,
        "role": ROLE_LABELS.get(invitation.role, invitation.role),
        "inviter": inviter_email,
        "link": invite_link(issued.token),
        "expires_at": invitation.expires_at,
    }
    subject = render_to_string("dashboard/team/invitation_subject.txt", context).strip()
    body = render_to_string("dashboard/team/invitation_email.txt", context)
    try:
        EmailMessage(subject, body, to=[invitation.email]).send()
    except (OSError, smtplib.SMTPException):
        logger.exception("an invitation mail could not be sent")


def team_invite(
    request: HttpRequest | None, *, company: Company, email: str, role: str, actor_role: str, by: Any = None
) -> Invitation:
    """Invite `email` as `role`; the link leaves by mail once the invitation is committed."""
    inviter = by if by is not None else getattr(request, "user", None)
    with transaction.atomic():
        issued = invitation_create(
            company=company,
            email=email,
            role=role,
            invited_by=inviter if getattr(inviter, "pk", None) else None,
            actor_role=actor_role,
        )
        detail = member_describe(issued.invitation.email, role)
        if issued.replaced:
            detail += " (the earlier invitation revoked)"
        audit_record(request, company=company, action="team.invite", detail=detail, user=by)
        inviter_email = str(getattr(inviter, "email", "") or company.name)
        transaction.on_commit(lambda: _mail_invitation(issued, inviter_email))
    return issued.invitation


def team_accept(
    request: HttpRequest, *, token: str, user: Any = None, password: str | None = None
) -> Membership:
    with transaction.atomic():
        member = invitation_accept(token=token, user=user, password=password)
        audit_record(
            request,
            company=member.company,
            action="team.accept",
            detail=member_describe(member.user.email, member.role),
            user=member.user,
        )
    return member


def team_set_role(
    request: HttpRequest | None,
    *,
    company: Company,
    member_id: int,
    role: str,
    actor_role: str,
    by: Any = None,
) -> tuple[Membership, str]:
    with transaction.atomic():
        member, before = member_set_role(
            company=company, member_id=member_id, role=role, actor_role=actor_role
        )
        if before != role:
            detail = member_describe(member.user.email, role, before)
            audit_record(request, company=company, action="team.role", detail=detail, user=by)
    return member, before


def team_remove(
    request: HttpRequest | None, *, company: Company, member_id: int, actor_role: str, by: Any = None
) -> Membership:
    """Remove the member and end every session of theirs at once (the guard would refuse them anyway:
    without a membership no merchant page opens)."""
    with transaction.atomic():
        member = member_remove(company=company, member_id=member_id, actor_role=actor_role)
        audit_record(
            request,
            company=company,
            action="team.remove",
            detail=member_describe(member.user.email, member.role),
            user=by,
        )
        sessions_end(member.user_id)
    return member


def team_invite_revoke(
    request: HttpRequest | None,
    *,
    company: Company,
    invitation_id: UUID | str,
    actor_role: str,
    by: Any = None,
) -> tuple[Invitation, bool]:
    with transaction.atomic():
        invitation, revoked = invitation_revoke(
            company=company, invitation_id=invitation_id, actor_role=actor_role
        )
        if revoked:
            detail = member_describe(invitation.email, invitation.role)
            audit_record(request, company=company, action="team.invite.revoke", detail=detail, user=by)
    return invitation, revoked


def sessions_end(user_id: int) -> int:
    """Delete every live session of the user (sessions are in the database, django.contrib.sessions);
    how many. Sessions carry only their user's id, so each live one is decoded."""
    ended = [
        session.pk
        for session in Session.objects.filter(expire_date__gt=timezone.now()).iterator()
        if str(session.get_decoded().get("_auth_user_id")) == str(user_id)
    ]
    Session.objects.filter(pk__in=ended).delete()
    return len(ended)


def tokens_made_by(company: Company, user: Any) -> int:
    """How many live tokens of `company` the user made (they stay active after the user leaves)."""
    return ApiToken.objects.filter(company=company, created_by=user, revoked_at__isnull=True).count()

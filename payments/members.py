"""A company's members: invited by e-mail, added with a role, moved to another role, removed.

Transitions, one function each (every one in a transaction; the caller audits inside it):
  invitation_create   a one-time link for an e-mail and a role; an earlier open one for that e-mail is revoked
  invitation_accept   the link's holder becomes a member (a new account, or one without a company)
  invitation_revoke   the link stops working
  member_set_role     a member's role changes
  member_remove       a member leaves the company (their account stays, without a company)

At least one owner always remains, so a company can never lock itself out; only an owner makes or unmakes
an owner. Changes to a company's members take the company row's lock first, so two admins demoting the
last two owners at once cannot both succeed. An invitation is kept as the SHA-256 of its token: the clear
token exists only in the mail.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from core.errors import FieldError, Forbidden, InvalidState, NotFound, ValidationFailed
from payments.models import Company, Invitation, Membership
from payments.roles import OWNER, ROLE_LABELS, ROLES
from payments.services import token_hash

INVITATION_DAYS = 7


class LastOwner(InvalidState):
    code = "last_owner"
    default_detail = "A company keeps at least one owner: make another member an owner first."


class InvitationClosed(InvalidState):
    """The link expired, was revoked or was used: it does nothing."""

    status = 410
    code = "invitation_closed"
    default_detail = "This invitation is no longer valid."


@dataclass(frozen=True)
class IssuedInvitation:
    invitation: Invitation
    token: str  # in clear, for the mail only
    replaced: int  # open invitations of the same e-mail revoked by this one


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ValidationFailed([FieldError("role", "invalid", f"A role is one of {', '.join(ROLES)}.")])


def _already_member(email: str) -> ValidationFailed:
    return ValidationFailed(
        [FieldError("email", "already_member", f"{email} is already a member of a company.")]
    )


def _check_actor(actor_role: str, *roles: str) -> None:
    """Only an owner gives or takes the owner role (an admin may manage everyone else)."""
    if OWNER in roles and actor_role != OWNER:
        raise Forbidden("Only an owner may make, change or remove an owner.")


def _lock(company: Company) -> Company:
    return Company.objects.select_for_update().get(pk=company.pk)


@transaction.atomic
def member_add(*, company: Company, user: Any, role: str, invited_by: Any = None) -> Membership:
    """`user` joins `company` as `role`; a user is a member of one company at most."""
    _check_role(role)
    if Membership.objects.filter(user=user).exists():
        raise _already_member(user.email)
    return Membership.objects.create(company=company, user=user, role=role, invited_by=invited_by)


def owners_left(company: Company, *, without: Membership) -> int:
    """How many owners `company` keeps if `without` stops being one (call under the members' lock)."""
    return Membership.objects.filter(company=company, role=OWNER).exclude(pk=without.pk).count()


def _member(company: Company, member_id: int) -> Membership:
    in_range = 0 < member_id < 2**63  # a URL's digits beyond the column's range are no member, not a 500
    found = (
        Membership.objects.select_related("user").filter(company=company, pk=member_id).first()
        if in_range
        else None
    )
    if found is None:
        raise NotFound("No such member.")
    return found


@transaction.atomic
def member_set_role(
    *, company: Company, member_id: int, role: str, actor_role: str
) -> tuple[Membership, str]:
    """The member with its new role, and the role it had."""
    _check_role(role)
    _lock(company)
    member = _member(company, member_id)
    before = member.role
    _check_actor(actor_role, before, role)
    if before == role:
        return member, before
    if before == OWNER and not owners_left(company, without=member):
        raise LastOwner(f"{member.user.email} is the last owner: make another member an owner first.")
    member.role = role
    member.save(update_fields=["role", "updated_at"])
    return member, before


@transaction.atomic
def member_remove(*, company: Company, member_id: int, actor_role: str) -> Membership:
    """The member removed (the row is gone; the returned object still names the user and the role).
    The user's account stays, and so do the tokens they made: revoking them is a decision of its own."""
    _lock(company)
    member = _member(company, member_id)
    _check_actor(actor_role, member.role)
    if member.role == OWNER and not owners_left(company, without=member):
        raise LastOwner(f"{member.user.email} is the last owner and cannot be removed.")
    member.delete()
    return member


# --- Invitations ---------------------------------------------------------------------------------------


def invitation_state(invitation: Invitation, now: datetime | None = None) -> str:
    """open, accepted, revoked or expired."""
    if invitation.accepted_at is not None:
        return "accepted"
    if invitation.revoked_at is not None:
        return "revoked"
    if invitation.expires_at <= (now or timezone.now()):
        return "expired"
    return "open"


def _email_is_member(email: str) -> bool:
    return Membership.objects.filter(user__email__iexact=email).exists()


@transaction.atomic
def invitation_create(
    *,
    company: Company,
    email: str,
    role: str,
    invited_by: Any,
    actor_role: str,
    now: datetime | None = None,
    days: int = INVITATION_DAYS,
) -> IssuedInvitation:
    """A one-time link for `email` to join as `role`, valid `days` days."""
    email = (email or "").strip().lower()
    if not email or "@" not in email:
        raise ValidationFailed([FieldError("email", "invalid", "Enter the e-mail address to invite.")])
    _check_role(role)
    _check_actor(actor_role, role)
    _lock(company)
    if _email_is_member(email):
        raise _already_member(email)
    now = now or timezone.now()
    replaced = Invitation.objects.filter(
        company=company, email__iexact=email, accepted_at__isnull=True, revoked_at__isnull=True
    ).update(revoked_at=now)
    token = secrets.token_urlsafe(32)
    invitation = Invitation.objects.create(
        company=company,
        email=email,
        role=role,
        token_hash=token_hash(token),
        invited_by=invited_by,
        expires_at=now + timedelta(days=days),
    )
    return IssuedInvitation(invitation=invitation, token=token, replaced=replaced)


def invitation_get_by_token(token: str) -> Invitation | None:
    """The invitation a link stands for, whatever its state (None: never ours)."""
    if not token or len(token) > 256:
        return None
    return Invitation.objects.select_related("company").filter(token_hash=token_hash(token)).first()


@transaction.atomic
def invitation_accept(
    *, token: str, user: Any = None, password: str | None = None, now: datetime | None = None
) -> Membership:
    """The holder of the link joins: `user` (logged in as the invited address, without a company) or, with
    `password` instead, a new account for the invited address. Of two requests with one link, the one that
    locks the row first joins; the other finds it used."""
    found = invitation_get_by_token(token)
    if found is None:
        raise InvitationClosed("This invitation link is not valid.")
    invitation = Invitation.objects.select_for_update().get(pk=found.pk)
    now = now or timezone.now()
    state = invitation_state(invitation, now)
    if state != "open":
        raise InvitationClosed(f"This invitation was {state}; ask for a new one.")
    if user is None:
        users = get_user_model()._default_manager
        if users.filter(email__iexact=invitation.email).exists():
            raise ValidationFailed(
                [FieldError("email", "exists", f"{invitation.email} has an account: log in to accept.")]
            )
        user = users.create_user(username=invitation.email, email=invitation.email, password=password)  # type: ignore[attr-defined]
    elif (user.email or "").lower() != invitation.email.lower():
        raise Forbidden(f"This invitation is for {invitation.email}: log in as that address to accept.")
    member = member_add(
        company=invitation.company, user=user, role=invitation.role, invited_by=invitation.invited_by
    )
    invitation.accepted_at = now
    invitation.save(update_fields=["accepted_at"])
    return member


@transaction.atomic
def invitation_revoke(
    *, company: Company, invitation_id: UUID | str, actor_role: str
) -> tuple[Invitation, bool]:
    """The link stops working; True when this call revoked it (False: it was no longer open)."""
    try:
        invitation = Invitation.objects.select_for_update().filter(company=company, pk=invitation_id).first()
    except (ValueError, TypeError):  # not a UUID
        invitation = None
    if invitation is None:
        raise NotFound("No such invitation.")
    _check_actor(actor_role, invitation.role)
    if invitation_state(invitation) != "open":
        return invitation, False
    invitation.revoked_at = timezone.now()
    invitation.save(update_fields=["revoked_at"])
    return invitation, True


# --- Reads ---------------------------------------------------------------------------------------------


def member_list_for_company(*, company: Company) -> QuerySet[Membership]:
    return (
        Membership.objects.filter(company=company)
        .select_related("user", "invited_by")
        .order_by("created_at", "pk")
    )


def invitation_list_open(*, company: Company, now: datetime | None = None) -> QuerySet[Invitation]:
    return (
        Invitation.objects.filter(
            company=company,
            accepted_at__isnull=True,
            revoked_at__isnull=True,
            expires_at__gt=now or timezone.now(),
        )
        .select_related("invited_by")
        .order_by("-created_at")
    )


def member_describe(email: str, role: str, before: str | None = None) -> str:
    """One line for the audit log: who and which roles, never a token."""
    if before is not None and before != role:
        return f"{email}: {ROLE_LABELS.get(before, before)} → {ROLE_LABELS.get(role, role)}"
    return f"{email} as {ROLE_LABELS.get(role, role)}"

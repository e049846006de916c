"""The confirmation page of dashboard withdrawals, and what the merchant does with a held one.

- `withdrawal_confirm`: GET shows a draft (withdrawals.drafts): every item, the total per asset (amounts plus
  network fees) beside the available balance, what the payout policy would hold, and, while the session is
  not fresh, the password or authenticator code field. POST sends it once (payout_draft_send) and redirects
  (303) to the same address, which then shows what was sent; a resubmission (double click, back and resend,
  a second tab) lands on that same page and creates nothing.
- `withdrawal_approve` (the approver's own authenticator code) and `withdrawal_cancel` (a step-up) act on a
  held withdrawal (withdrawals.approvals): the member who sent a withdrawal is recorded as its maker, and
  someone else approves it (four eyes). Every action is audited in the transaction that makes it.
"""

from __future__ import annotations

from django.contrib import messages
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from core.errors import DomainError, NotFound, ValidationFailed
from core.money import number_text
from payments.dashboard.views.common import merchant_view
from payments.models import Company
from security.audit import audit_record
from security.stepup import is_fresh
from security.totp import has_totp
from withdrawals.approvals import maker_may_approve, withdrawals_made_by
from withdrawals.approvals import withdrawal_approve as approve
from withdrawals.approvals import withdrawal_cancel as cancel
from withdrawals.dashboard.confirming import SecretForm, code_confirmed, stepped_up
from withdrawals.dashboard.forms import ApproveForm
from withdrawals.drafts import (
    DraftSummary,
    draft_withdrawals,
    payout_draft_get,
    payout_draft_send,
    payout_draft_summary,
)
from withdrawals.models import PayoutDraft, Withdrawal
from withdrawals.policy import hold_reasons
from withdrawals.selectors import withdrawal_get_for_company


def _audit_detail(draft: PayoutDraft, withdrawals: list[Withdrawal]) -> str:
    if len(withdrawals) == 1:
        w = withdrawals[0]
        return f"{w.uid}: {number_text(w.amount)} {w.code} to {w.to_address}"
    sums: dict[str, list[str]] = {}
    for w in withdrawals:
        sums.setdefault(w.code, []).append(w.uid)
    return f"{len(withdrawals)} withdrawals {withdrawals[0].uid} … {withdrawals[-1].uid} in " + ", ".join(
        f"{code} ({len(uids)})" for code, uids in sorted(sums.items())
    )


def _page(
    request: HttpRequest,
    company: Company,
    draft: PayoutDraft,
    *,
    form: SecretForm | None = None,
    summary: DraftSummary | None = None,
) -> HttpResponse:
    sent = draft.sent_at is not None
    context = {
        "company": company,
        "nav": "withdrawals",
        "draft": draft,
        "sent": sent,
        "withdrawals": [{"w": w, "hold": hold_reasons(w)} for w in draft_withdrawals(draft)] if sent else [],
        "summary": None if sent else summary or payout_draft_summary(company=company, draft=draft),
        "form": form or SecretForm(),
        "fresh": is_fresh(request),
    }
    # Refusals are shown on the page with 200, as every dashboard form does (the browser shows the page).
    return render(request, "withdrawals/withdrawal_confirm.html", context)


@require_http_methods(["GET", "POST"])
@merchant_view
def withdrawal_confirm(request: HttpRequest, company: Company, token: str) -> HttpResponse:
    try:
        draft = payout_draft_get(company=company, token=token)
    except NotFound as exc:
        raise Http404(exc.detail) from exc
    if request.method == "GET" or draft.sent_at is not None:
        if request.method == "POST":
            return redirect("dashboard:withdrawal_confirm", token=token)  # a resubmission: what was sent
        return _page(request, company, draft)
    form = SecretForm(request.POST)
    if not form.is_valid() or not stepped_up(request, form):
        return _page(request, company, draft, form=form)
    try:
        with transaction.atomic():
            draft, sent_now = payout_draft_send(company=company, token=token)
            if sent_now:
                withdrawals_made_by(company=company, uids=draft.uids, user_id=request.user.pk)
                action = "withdrawal.bulk" if draft.kind == PayoutDraft.Kind.BULK else "withdrawal.create"
                detail = _audit_detail(draft, draft_withdrawals(draft))
                audit_record(request, company=company, action=action, detail=detail)
    except ValidationFailed as exc:  # short by now, over a limit by now: nothing was sent
        summary = payout_draft_summary(company=company, draft=draft)
        summary.errors = exc.errors or summary.errors
        return _page(request, company, draft, summary=summary)
    if sent_now:
        count = len(draft.uids)
        left_out = (
            f" {draft.skipped} invalid line{'s' if draft.skipped != 1 else ''} left out."
            if draft.skipped
            else ""
        )
        messages.success(request, f"{count} withdrawal{'s' if count != 1 else ''} accepted.{left_out}")
    response = redirect("dashboard:withdrawal_confirm", token=token)
    response.status_code = 303
    return response


OWN_REFUSED = (
    "You requested this withdrawal, so you cannot approve it: another owner, admin or finance member "
    "approves it with their authenticator code."
)


def _back(uid: str) -> HttpResponse:
    response = redirect("dashboard:withdrawal_detail", uid=uid)
    response.status_code = 303
    return response


@require_POST
@merchant_view
def withdrawal_approve(request: HttpRequest, company: Company, uid: str) -> HttpResponse:
    """Approve a withdrawal held for approval, with a code from the approver's own authenticator app; its
    maker is refused before any code is spent while another member may approve."""
    form = ApproveForm(request.POST)
    try:
        held = withdrawal_get_for_company(company=company, uid=uid)
    except NotFound as exc:
        raise Http404(exc.detail) from exc
    if not maker_may_approve(company, held, request.user):
        messages.error(request, OWN_REFUSED)
        return _back(uid)
    if not has_totp(request.user):
        messages.error(request, "Approvals need two-factor authentication: turn it on under Security first.")
        return _back(uid)
    if not form.is_valid():
        messages.error(request, "Enter the 6-digit code from your authenticator app to approve.")
        return _back(uid)
    problem = code_confirmed(request, form.cleaned_data["code"])
    if problem:
        messages.error(request, problem)
        return _back(uid)
    try:
        with transaction.atomic():
            withdrawal = approve(company=company, uid=uid, approver=request.user)
            maker = withdrawal.requested_by.get_username() if withdrawal.requested_by else "the API"
            detail = f"{withdrawal.uid}, requested by {maker}"
            audit_record(request, company=company, action="withdrawal.approve", detail=detail)
    except NotFound as exc:
        raise Http404(exc.detail) from exc
    except DomainError as exc:
        messages.error(request, exc.detail)
        return _back(uid)
    when = "it is sent in a moment" if not hold_reasons(withdrawal) else "it is sent once its cool-down ends"
    messages.success(request, f"Withdrawal {withdrawal.uid} approved: {when}.")
    return _back(uid)


@require_POST
@merchant_view
def withdrawal_cancel(request: HttpRequest, company: Company, uid: str) -> HttpResponse:
    """Cancel a held withdrawal (after a step-up): rejected, its amount and fee back in the balance."""
    form = SecretForm(request.POST)
    if not form.is_valid() or not stepped_up(request, form):
        errors = [str(error) for errors in form.errors.values() for error in errors]
        messages.error(request, " ".join(errors) or "Confirm with your password or authenticator code.")
        return _back(uid)
    try:
        with transaction.atomic():
            withdrawal = cancel(company=company, uid=uid)
            detail = f"{withdrawal.uid}: {number_text(withdrawal.amount)} {withdrawal.code}"
            audit_record(request, company=company, action="withdrawal.cancel", detail=detail)
    except NotFound as exc:
        raise Http404(exc.detail) from exc
    except DomainError as exc:
        messages.error(request, exc.detail)
        return _back(uid)
    released = f"{number_text(withdrawal.held_amount)} {withdrawal.code}"
    messages.success(request, f"Withdrawal {withdrawal.uid} cancelled: {released} is available again.")
    return _back(uid)

"""Security pages: overview, authenticator enrolment and removal, recovery codes, and the company's 2FA
requirement (its owner's to set). The audit log is in audit_views."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from core.errors import ValidationFailed
from payments.dashboard.views.common import account_view, merchant_view, pop_once, show_once
from payments.models import Company
from payments.roles import OWNER
from security import recovery, totp
from security.audit import audit_record
from security.dashboard.forms import TotpConfirmForm
from security.dashboard.qr import qr_svg
from security.dashboard.step_up import step_up_required
from security.requirements import company_require_2fa_set, company_requires_2fa

NEW_CODES = "recovery_codes"
NAV = "security"


def _company_requires(company: Company | None) -> bool:
    return company is not None and company_requires_2fa(company=company)


def _audit(request: HttpRequest, company: Company | None, action: str, detail: str = "") -> None:
    """In the company's log; an operator's account without a company has none to write to."""
    if company is not None:
        audit_record(request, company=company, action=action, detail=detail)


@account_view
def overview(request: HttpRequest, company: Company | None) -> HttpResponse:
    user = request.user
    enabled = totp.has_totp(user)
    context = {
        "company": company,
        "nav": NAV,
        "totp_enabled": enabled,
        "codes_left": recovery.recovery_codes_left(user=user) if enabled else 0,
        "require_2fa": settings.DASHBOARD_REQUIRE_2FA,
        "company_requires_2fa": _company_requires(company),
        "is_owner": company is not None and getattr(request, "member_role", None) == OWNER,
        "step_up_minutes": max(1, int(settings.DASHBOARD_STEP_UP_SECONDS) // 60),
        "idle_minutes": max(1, int(settings.DASHBOARD_IDLE_TIMEOUT_SECONDS) // 60),
    }
    return render(request, "security/security_overview.html", context)


@require_http_methods(["GET", "POST"])
@account_view
@step_up_required
def totp_enrol(request: HttpRequest, company: Company | None) -> HttpResponse:
    """Scan the QR code (or type the secret), then prove it with a code: only then is it active."""
    user = request.user
    try:
        device = totp.totp_enrol_start(user=user)
    except totp.AlreadyEnrolled:
        messages.info(request, "Two-factor authentication is already on.")
        return redirect("dashboard:security")
    form = TotpConfirmForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            confirmed = totp.totp_enrol_confirm(user=user, code=form.cleaned_data["code"])
            if confirmed:
                codes = recovery.recovery_codes_generate(user=user)
                _audit(request, company, "2fa.enable", "authenticator app")
        if confirmed:
            show_once(request, NEW_CODES, codes)
            messages.success(request, "Two-factor authentication is on.")
            return redirect("dashboard:recovery_codes")
        form.add_error("code", "That code does not match. Check the time on your phone and try the next one.")
    secret = totp.device_secret(device)
    uri = totp.provisioning_uri(device, user.get_username())
    context = {
        "company": company,
        "nav": NAV,
        "form": form,
        "secret": secret,
        "secret_groups": " ".join(secret[i : i + 4] for i in range(0, len(secret), 4)),
        "qr_svg": qr_svg(uri, title="QR code for your authenticator app"),
        "require_2fa": settings.DASHBOARD_REQUIRE_2FA or _company_requires(company),
    }
    return render(request, "security/security_enrol.html", context, status=400 if form.errors else 200)


@account_view
def recovery_codes(request: HttpRequest, company: Company | None) -> HttpResponse:
    """The new recovery codes, once: a reload finds nothing and goes back to the overview."""
    codes = pop_once(request, NEW_CODES)
    if not codes:
        return redirect("dashboard:security")
    return render(
        request, "security/security_recovery_codes.html", {"company": company, "nav": NAV, "codes": codes}
    )


@require_POST
@account_view
@step_up_required
def recovery_codes_regenerate(request: HttpRequest, company: Company | None) -> HttpResponse:
    if not totp.has_totp(request.user):
        return redirect("dashboard:security")
    with transaction.atomic():
        codes = recovery.recovery_codes_generate(user=request.user)
        _audit(request, company, "recovery_codes.regenerate")
    show_once(request, NEW_CODES, codes)
    messages.success(request, "New recovery codes were made. The previous ones no longer work.")
    return redirect("dashboard:recovery_codes")


@require_POST
@account_view
@step_up_required
def totp_disable(request: HttpRequest, company: Company | None) -> HttpResponse:
    if settings.DASHBOARD_REQUIRE_2FA or _company_requires(company):
        where = "on this server" if settings.DASHBOARD_REQUIRE_2FA else "by your company"
        messages.error(request, f"Two-factor authentication is required {where}: it cannot be turned off.")
        return redirect("dashboard:security")
    with transaction.atomic():
        removed = totp.totp_disable(user=request.user)
        if removed:
            _audit(request, company, "2fa.disable")
    if removed:
        messages.success(request, "Two-factor authentication is off. Your recovery codes no longer work.")
    return redirect("dashboard:security")


@require_POST
@merchant_view
@step_up_required
def require_2fa(request: HttpRequest, company: Company) -> HttpResponse:
    """The owner requires (or stops requiring) two-factor authentication of every member; audited."""
    if getattr(request, "member_role", None) != OWNER:
        messages.error(request, "Only an owner of the company sets this.")
        return redirect("dashboard:security")
    required = request.POST.get("require_2fa") == "on"
    try:
        with transaction.atomic():
            changed = company_require_2fa_set(company=company, required=required, by=request.user)
            if changed:
                _audit(request, company, "security.require_2fa", "on" if required else "off")
    except ValidationFailed as exc:
        messages.error(request, exc.detail)
        return redirect("dashboard:security")
    if changed:
        messages.success(
            request,
            "Every member now needs two-factor authentication."
            if required
            else "Members may now log in without two-factor authentication.",
        )
    return redirect("dashboard:security")

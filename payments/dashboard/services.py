"""Writes the dashboard needs that the core does not offer (yet): each belongs next to its siblings.

`company_set_signing_secret` and `company_set_payment_settings` belong in payments/services.py beside
`company_rotate_signing_secret` and `company_set_redirect_url`; `underpayment_limits_set` belongs in
invoices (the API view writes the limits inline). They live here because the dashboard may not edit
those files; same style: keyword arguments, a row lock, only changed fields saved.

`webhook_send_test` posts a signed test event straight to the merchant's URL: a test is not a real event,
so it is not written to the outbox, never retried and never listed among the deliveries.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from uuid import UUID

import requests
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from invoices.models import UnderpaymentLimit
from payments import jsonutil, keys
from payments.assets import BASE_ASSETS
from payments.errors import FieldError, InvalidState, ValidationFailed
from payments.models import Company, FeePayer
from payments.services import company_signing_secret
from payments.wire import iso_utc
from webhooks.http import guarded_session
from webhooks.services import EXCERPT_BYTES, USER_AGENT
from webhooks.signing import signed_headers

SIGNING_SECRET_MIN_LENGTH = 16
SIGNING_SECRET_MAX_LENGTH = 128


# --- signing secret -------------------------------------------------------------------------------------


def signing_secret_errors(secret: str) -> list[FieldError]:
    """16..128 printable ASCII characters, no whitespace at either end (the signature trims it away)."""
    if not SIGNING_SECRET_MIN_LENGTH <= len(secret) <= SIGNING_SECRET_MAX_LENGTH:
        message = (
            f"The secret must be {SIGNING_SECRET_MIN_LENGTH} to {SIGNING_SECRET_MAX_LENGTH} characters long "
            f"(it has {len(secret)})."
        )
        return [FieldError("secret", "invalid_secret", message)]
    if any(not " " <= char <= "~" for char in secret):
        return [
            FieldError(
                "secret", "invalid_secret", "Use printable ASCII characters only (letters, digits, symbols)."
            )
        ]
    if secret != secret.strip():
        # Receivers and Kassa both trim the secret before signing (API.md §5): a space there would be lost.
        return [FieldError("secret", "invalid_secret", "The secret must not start or end with a space.")]
    return []


@transaction.atomic
def company_set_signing_secret(*, company_id: UUID | str, secret: str) -> Company:
    """The merchant's own signing secret, encrypted at rest like a generated one."""
    errors = signing_secret_errors(secret)
    if errors:
        raise ValidationFailed(errors)
    company = Company.objects.select_for_update().get(pk=company_id)
    company.signing_secret_encrypted = keys.encrypt(secret)
    company.save(update_fields=["signing_secret_encrypted", "updated_at"])
    return company


# --- payment settings -----------------------------------------------------------------------------------


@transaction.atomic
def company_set_payment_settings(
    *, company_id: UUID | str, allowed_assets: Sequence[str], default_fee_payer: str
) -> Company:
    """Base assets clients may pay with (at least one) and who pays the fee by default."""
    errors: list[FieldError] = []
    wanted = {asset.strip().lower() for asset in allowed_assets}
    unknown = sorted(wanted - set(BASE_ASSETS))
    if unknown:
        errors.append(
            FieldError("allowed_assets", "unsupported_asset", f"Unknown assets: {', '.join(unknown)}.")
        )
    elif not wanted:
        errors.append(FieldError("allowed_assets", "required", "Allow at least one asset."))
    if default_fee_payer not in FeePayer.values:
        errors.append(FieldError("default_fee_payer", "invalid", "Choose buyer or merchant."))
    if errors:
        raise ValidationFailed(errors)
    company = Company.objects.select_for_update().get(pk=company_id)
    company.allowed_assets = [base for base in BASE_ASSETS if base in wanted]  # API.md order
    company.default_fee_payer = default_fee_payer
    company.save(update_fields=["allowed_assets", "default_fee_payer", "updated_at"])
    return company


@transaction.atomic
def underpayment_limits_set(*, company: Company, limits: Mapping[str, Mapping[str, Decimal]]) -> None:
    """Payment code -> {"static", "percentage"}, validated by invoices.api.settings.LimitSerializer."""
    for code, values in limits.items():
        UnderpaymentLimit.objects.update_or_create(
            company=company,
            code=code,
            defaults={"static": values["static"], "percentage": values["percentage"]},
        )


# --- test webhook ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TestDelivery:
    url: str
    body: str
    status_code: int | None
    excerpt: str
    duration_ms: int
    error: str

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300 and not self.error


def webhook_send_test(*, company: Company) -> TestDelivery:
    """POST a signed test event to the current webhook URL now and report the receiver's answer.

    Same client as real deliveries: the SSRF guard at connect time, no proxies, no redirects, the same
    timeouts and the same headers, so a passing test means real events will get through.
    """
    company.refresh_from_db(fields=["webhook_url", "signing_secret_encrypted"])
    url = company.webhook_url
    if not url:
        raise InvalidState("Set a webhook URL before sending a test event.")
    webhook_id = str(uuid.uuid4())
    body_text = jsonutil.dumps(
        {
            "type": "test",
            "message": "Test event from the Kassa dashboard",
            "id": webhook_id,
            "createdAt": iso_utc(timezone.now()),
        }
    )
    body = body_text.encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        **signed_headers(company_signing_secret(company), webhook_id, int(time.time()), body),
    }
    connect_timeout = settings.WEBHOOK_CONNECT_TIMEOUT_SECONDS
    total = settings.WEBHOOK_TOTAL_TIMEOUT_SECONDS
    started = time.monotonic()
    status_code: int | None = None
    excerpt = error = ""
    try:
        with guarded_session() as session:
            response = session.post(
                url,
                data=body,
                headers=headers,
                timeout=(connect_timeout, total),
                allow_redirects=False,
                stream=True,
            )
            with response:
                status_code = response.status_code
                raw = response.raw.read(EXCERPT_BYTES, decode_content=True) or b""
                excerpt = raw.decode("utf-8", errors="replace")
        if 300 <= status_code < 400:
            error = f"redirect to {response.headers.get('Location', '?')} not followed"
    except requests.Timeout:
        error = f"timed out (connect {connect_timeout} s, total {total} s)"
    except Exception as exc:  # any failure is the answer to show, never a 500 of the dashboard
        error = f"{exc.__class__.__name__}: {exc}"
    duration_ms = int((time.monotonic() - started) * 1000)
    return TestDelivery(
        url=url,
        body=body_text,
        status_code=status_code,
        excerpt=excerpt,
        duration_ms=duration_ms,
        error=error[:500],
    )

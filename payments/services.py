"""Writes on merchants: creation, token and secret rotation, webhook URL (`<noun>_<verb>`)."""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from uuid import UUID

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from core import keys
from core.assets import BASE_ASSETS
from core.errors import FieldError, ValidationFailed
from core.ssrf import UnsafeWebhookUrl, validate_webhook_url
from payments.models import Company, FeePayer, Membership
from payments.roles import OWNER

TOKEN_PREFIX = "kassa_pk_"  # noqa: S105 - a prefix, not a secret
SECRET_PREFIX = "whsec_"  # noqa: S105 - a prefix, not a secret


@dataclass(frozen=True)
class MerchantCredentials:
    company: Company
    public_token: str
    signing_secret: str


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def _new_signing_secret() -> str:
    # Standard Webhooks format: the part after "whsec_" is base64 of the key bytes.
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def _display_prefix(token: str) -> str:
    return token[: len(TOKEN_PREFIX) + 4]


def company_create(*, owner: User, name: str, logo_url: str = "") -> MerchantCredentials:
    """Create the company; the returned token and secret are the only time the token is seen in clear."""
    token, secret = _new_token(), _new_signing_secret()
    for attempt in range(5):
        try:
            with transaction.atomic():
                # max+1 under a unique constraint: a concurrent creation fails the insert and retries.
                number = (Company.objects.aggregate(top=Max("number"))["top"] or 0) + 1
                company = Company.objects.create(
                    number=number,
                    name=name,
                    logo_url=logo_url,
                    owner=owner,
                    token_hash=token_hash(token),
                    token_prefix=_display_prefix(token),
                    token_rotated_at=timezone.now(),
                    signing_secret_encrypted=keys.encrypt(secret),
                )
                Membership.objects.create(company=company, user=owner, role=OWNER)
            return MerchantCredentials(company=company, public_token=token, signing_secret=secret)
        except IntegrityError:
            if attempt == 4:
                raise
    raise AssertionError("unreachable")


@transaction.atomic
def merchant_create(*, name: str, email: str, password: str | None = None) -> MerchantCredentials:
    """A dashboard user plus their company. Without a password the user cannot log in until reset."""
    email = email.strip().lower()
    user_model = get_user_model()
    if user_model.objects.filter(username=email).exists():
        raise ValidationFailed([FieldError("email", "already_exists", f"A merchant with {email} exists.")])
    user = user_model.objects.create_user(username=email, email=email, password=password)
    return company_create(owner=user, name=name)


@transaction.atomic
def company_rotate_token(*, company_id: UUID | str) -> str:
    """Issue a new public token; the old one stops working at commit."""
    company = Company.objects.select_for_update().get(pk=company_id)
    token = _new_token()
    company.token_hash = token_hash(token)
    company.token_prefix = _display_prefix(token)
    company.token_rotated_at = timezone.now()
    company.save(update_fields=["token_hash", "token_prefix", "token_rotated_at", "updated_at"])
    return token


def _replace_signing_secret(company: Company, secret: str, overlap: timedelta | None) -> None:
    """The new secret signs from now on; the old one signs beside it for `overlap` (default: the
    WEBHOOK_SECRET_OVERLAP_HOURS setting), keeping the `signature` header until then (webhooks.signing), so
    receivers can switch without rejecting a webhook."""
    overlap = timedelta(hours=settings.WEBHOOK_SECRET_OVERLAP_HOURS) if overlap is None else overlap
    if overlap > timedelta(0):
        company.previous_signing_secret_encrypted = company.signing_secret_encrypted
        company.previous_signing_secret_until = timezone.now() + overlap
    else:
        company.previous_signing_secret_encrypted = ""
        company.previous_signing_secret_until = None
    company.signing_secret_encrypted = keys.encrypt(secret)
    company.save(
        update_fields=[
            "signing_secret_encrypted",
            "previous_signing_secret_encrypted",
            "previous_signing_secret_until",
            "updated_at",
        ]
    )


@transaction.atomic
def company_rotate_signing_secret(*, company_id: UUID | str, overlap: timedelta | None = None) -> str:
    company = Company.objects.select_for_update().get(pk=company_id)
    secret = _new_signing_secret()
    _replace_signing_secret(company, secret, overlap)
    return secret


def company_signing_secret(company: Company) -> str:
    return keys.decrypt(company.signing_secret_encrypted)


def company_previous_signing_secret(company: Company) -> str | None:
    """The secret before the last rotation while its overlap lasts, else None."""
    until = company.previous_signing_secret_until
    if not company.previous_signing_secret_encrypted or until is None or until <= timezone.now():
        return None
    return keys.decrypt(company.previous_signing_secret_encrypted)


URL_MAX_LENGTH = 2048  # the columns of webhook and redirect URLs


def _check_url_length(value: str, field: str) -> None:
    if len(value) > URL_MAX_LENGTH:
        message = f"Ensure this field has no more than {URL_MAX_LENGTH} characters."
        raise ValidationFailed([FieldError(field, "max_length", message)])


def webhook_url_check(value: str | None, *, field: str = "webHookUrl") -> str:
    """A webhook URL as stored: "" (none) or a public http(s) URL (the SSRF guard), else ValidationFailed."""
    if not value or not value.strip():
        return ""
    _check_url_length(value, field)
    try:
        return validate_webhook_url(value)
    except UnsafeWebhookUrl as exc:
        raise ValidationFailed([FieldError(field, "invalid_url", str(exc))]) from exc


def redirect_url_check(value: str | None, *, field: str = "redirectURL") -> str:
    """A redirect URL as stored (a company default or an invoice's own): "" or an absolute http(s) URL."""
    value = (value or "").strip()
    if not value:
        return ""
    _check_url_length(value, field)
    try:
        URLValidator()(value)
    except DjangoValidationError as exc:
        raise ValidationFailed([FieldError(field, "invalid", "Enter a valid URL.")]) from exc
    if not value.lower().startswith(("http://", "https://")):
        raise ValidationFailed([FieldError(field, "invalid", "Only http and https URLs.")])
    return value


def company_set_webhook_url(*, company_id: UUID | str, url: str | None) -> str:
    """The URL webhooks go to, checked by `webhook_url_check` (None or "" stops them); returns it as stored.

    One UPDATE, atomic by itself: nothing else of the company is read or written, so there is no row to
    lock first (and the check, which may resolve the host, runs once, here)."""
    url = webhook_url_check(url)
    if not Company.objects.filter(pk=company_id).update(webhook_url=url, updated_at=timezone.now()):
        raise Company.DoesNotExist(f"no company {company_id}")
    return url


@transaction.atomic
def company_set_redirect_url(*, company_id: UUID | str, url: str) -> Company:
    """The default redirect after a paid invoice, checked by `redirect_url_check`; "" = stay on the page."""
    url = redirect_url_check(url)
    company = Company.objects.select_for_update().get(pk=company_id)
    company.redirect_url = url
    company.save(update_fields=["redirect_url", "updated_at"])
    return company


SIGNING_SECRET_MIN_LENGTH = 16
SIGNING_SECRET_MAX_LENGTH = 128


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
        # Receivers and Kassa both trim the secret before signing (docs/api.md): a space there would be lost.
        return [FieldError("secret", "invalid_secret", "The secret must not start or end with a space.")]
    return []


@transaction.atomic
def company_set_signing_secret(*, company_id: UUID | str, secret: str) -> Company:
    """The merchant's own signing secret, encrypted at rest like a generated one."""
    errors = signing_secret_errors(secret)
    if errors:
        raise ValidationFailed(errors)
    company = Company.objects.select_for_update().get(pk=company_id)
    _replace_signing_secret(company, secret, None)
    return company


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
    company.allowed_assets = [base for base in BASE_ASSETS if base in wanted]  # the documented order
    company.default_fee_payer = default_fee_payer
    company.save(update_fields=["allowed_assets", "default_fee_payer", "updated_at"])
    return company

"""Merchants' claims on unrouted payments: "my customer paid this transaction without the right tag". A claim
is stored and shown to the operator beside the matching unrouted deposit; the operator decides
(chains.unrouted decides the claim in the same commit). A merchant sees only its own claims, never the
unrouted deposits themselves."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from chains.models import DepositClaim
from chains.unrouted import assign_targets
from core.assets import get_asset
from core.errors import FieldError, NotFound, UnsupportedAsset, ValidationFailed
from core.offer import is_sandbox, require_offered
from payments.models import Company

CLAIMS_PER_DAY = 20  # per merchant: enough for a bad day of support tickets, too few to fish for hashes

_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
# (pattern, case-insensitive): a hexadecimal id is stored lowercase, a base58 or base64 one as given.
_HEX64 = (re.compile(r"[0-9a-fA-F]{64}"), True)
_HEX64_0X = (re.compile(r"0x[0-9a-fA-F]{64}"), True)
_BASE64_44 = (re.compile(r"[A-Za-z0-9+/_-]{43}=?"), False)
_HEX = "64 hexadecimal characters"
# The transaction id each family's explorers and wallets show (what a customer copies), like the address
# checks of chains.addresses: its accepted shapes, and how the form says it.
TXID_SHAPES: dict[str, tuple[tuple[tuple[re.Pattern[str], bool], ...], str]] = {
    "btc": ((_HEX64,), _HEX),
    "ltc": ((_HEX64,), _HEX),
    "bch": ((_HEX64,), _HEX),
    "tron": ((_HEX64,), _HEX),
    "evm": ((_HEX64_0X,), f"0x and {_HEX}"),
    "ton": ((_HEX64, _BASE64_44), f"{_HEX} or 44 base64 characters"),
    "sol": (((re.compile(f"[{_BASE58}]{{86,88}}"), False),), "a base58 signature of 86 to 88 characters"),
    "near": (((re.compile(f"[{_BASE58}]{{43,44}}"), False),), "a base58 hash of 43 or 44 characters"),
}
SANDBOX_SHAPE = ((_HEX64,), f"{_HEX} (a sandbox transaction)")


def txid_check(code: str, txid: str) -> str:
    """The transaction id in its stored form, or ValidationFailed naming `txid` with the shape expected."""
    value = txid.strip()
    shapes, text = SANDBOX_SHAPE if is_sandbox(code) else TXID_SHAPES[get_asset(code).family]
    for pattern, folded in shapes:
        if pattern.fullmatch(value):
            return value.lower() if folded else value
    raise ValidationFailed([FieldError("txid", "invalid_txid", f"a {code} transaction hash is {text}")])


def deposit_claim_create(
    *, company: Company, code: str, txid: str, invoice_id: str = "", message: str = ""
) -> DepositClaim:
    """Store the merchant's claim (once per transaction; a repeat answers with the first one)."""
    try:
        code = require_offered(code).code
    except UnsupportedAsset as exc:
        raise ValidationFailed([FieldError("asset", UnsupportedAsset.code, exc.detail)]) from exc
    txid = txid_check(code, txid)
    invoice = None
    if invoice_id.strip():
        try:
            invoice = uuid.UUID(invoice_id.strip())
        except ValueError as exc:
            raise ValidationFailed([FieldError("invoice", "invalid", "an invoice id is a UUID")]) from exc
    if invoice is not None:
        _check_invoice(company, code, invoice)
    existing = DepositClaim.objects.filter(company=company, code=code, txid=txid).first()
    if existing is not None:
        return existing
    since = timezone.now() - timedelta(days=1)
    if DepositClaim.objects.filter(company=company, created_at__gte=since).count() >= CLAIMS_PER_DAY:
        raise ValidationFailed(
            [
                FieldError(
                    "txid", "too_many_claims", f"at most {CLAIMS_PER_DAY} claims a day; try again tomorrow"
                )
            ]
        )
    try:
        with transaction.atomic():
            return DepositClaim.objects.create(
                company=company, code=code, txid=txid, invoice_id=invoice, message=message.strip()[:500]
            )
    except IntegrityError:  # the same claim sent twice at once
        return DepositClaim.objects.get(company=company, code=code, txid=txid)


def _check_invoice(company: Company, code: str, invoice_id: uuid.UUID) -> None:
    """The claimed invoice is one of the company's, filled with this network: the operator's "invoice" target
    (chains.unrouted) answers, so the claim names what an assignment could credit. Another merchant's
    invoice is answered exactly like one that does not exist."""
    resolve = assign_targets.get("invoice")
    if resolve is None:
        return  # no invoices app: the id is kept as the merchant gave it
    missing = ValidationFailed([FieldError("invoice", "not_found", "you have no invoice with this id")])
    try:
        address = resolve(str(invoice_id))
    except NotFound as exc:
        raise missing from exc
    except ValidationFailed as exc:
        raise ValidationFailed([FieldError("invoice", e.code, e.message) for e in exc.errors]) from exc
    if address.company_id != company.pk:
        raise missing
    if address.code != code:
        raise ValidationFailed(
            [FieldError("invoice", "wrong_asset", f"this invoice is paid in {address.code}, not {code}")]
        )


def deposit_claim_list_for_company(*, company: Company) -> QuerySet[DepositClaim]:
    return DepositClaim.objects.filter(company=company).order_by("-created_at", "-pk")

"""Static deposit addresses (docs/decisions.md) and their deposit webhooks (docs/api.md)."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from chains.base import is_sandbox, require_offered
from payments.assets import get_asset, normalize_code
from payments.deposit_addresses import deposit_address_allocate
from payments.deposits import register_deposit_handler
from payments.errors import FieldError, UnsupportedAsset, ValidationFailed
from payments.ledger import ledger_credit
from payments.models import Company, Deposit, DepositAddress, LedgerEntry, StaticDepositAddress
from webhooks.models import WebhookEvent
from webhooks.payloads import deposit_body
from webhooks.services import webhook_publish


def static_address_get_or_create(
    *, company: Company, internal_user_id: str, email: str, asset: str, network: str
) -> tuple[StaticDepositAddress, bool]:
    """The user's address on `network`: the existing one when the internal id (or e-mail) asked before."""
    code = require_offered(network).code
    if normalize_code(asset) != get_asset(code).base:
        raise ValidationFailed(
            [
                FieldError(
                    "asset",
                    UnsupportedAsset.code,
                    f"network {code} carries {get_asset(code).base}, not {asset}",
                )
            ]
        )
    existing = _find(company, code, internal_user_id, email)
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            deposit_address = deposit_address_allocate(
                company=company, code=code, owner=DepositAddress.Owner.STATIC
            )
            static = StaticDepositAddress.objects.create(
                company=company,
                deposit_address=deposit_address,
                code=code,
                internal_user_id=internal_user_id,
                email=email,
            )
    except IntegrityError:
        # The same user asked twice at once: the other request created it; ours allocated nothing.
        found = _find(company, code, internal_user_id, email)
        if found is None:
            raise
        return found, False
    return static, True


def _find(company: Company, code: str, internal_user_id: str, email: str) -> StaticDepositAddress | None:
    mine = StaticDepositAddress.objects.filter(company=company, code=code).select_related("deposit_address")
    found = mine.filter(internal_user_id=internal_user_id).first()
    if found is None and email:
        found = mine.filter(email__iexact=email).order_by("created_at").first()
    return found


class StaticDepositHandler:
    """Deposits to static addresses: processing when seen, credited and done when confirmed."""

    def on_seen(self, deposit: Deposit) -> None:
        _publish(deposit, "processing")

    def on_confirmed(self, deposit: Deposit) -> None:
        assert deposit.company_id is not None
        ledger_credit(
            company_id=deposit.company_id,
            code=deposit.code,
            amount=deposit.amount,
            kind=LedgerEntry.Kind.DEPOSIT_CREDIT,
            reference=f"deposit:{deposit.pk}",
        )
        _publish(deposit, "done")

    def on_failed(self, deposit: Deposit) -> None:
        # "failed" or "frozen", as the webhook names them; a dropped transfer failed on the chain's side.
        _publish(deposit, "frozen" if deposit.status == Deposit.Status.FROZEN else "failed")


def _publish(deposit: Deposit, status: str) -> None:
    static = StaticDepositAddress.objects.select_related("company", "deposit_address").get(
        deposit_address_id=deposit.deposit_address_id
    )
    asset = get_asset(deposit.code)
    body = deposit_body(
        amount=deposit.amount,
        asset=asset.base,
        network=asset.code,
        deposit_address=static.deposit_address.address,
        status=status,
        address_id=str(static.pk),
        internal_user_id=static.internal_user_id,
        tx_hash=deposit.txid,
        email=static.email or None,
        fee_payer=static.company.default_fee_payer,
        sandbox=is_sandbox(asset.code),
    )
    webhook_publish(
        company=static.company, family=WebhookEvent.Family.DEPOSIT, object_id=str(deposit.pk), body=body
    )


register_deposit_handler(DepositAddress.Owner.STATIC, StaticDepositHandler())

"""Invoice refunds: the handler invoices' `invoice_refund` calls to send the client's payment back."""

from __future__ import annotations

from decimal import localcontext

from core.assets import get_asset
from core.errors import FieldError, ValidationFailed
from core.money import MONEY_CONTEXT, number_text
from invoices.models import Invoice
from payments.ledger import InsufficientBalance
from withdrawals.models import Withdrawal
from withdrawals.rules import WithdrawalItem, check_item
from withdrawals.services import insufficient_errors, withdrawal_accept


def withdrawal_refund_invoice(invoice: Invoice) -> Withdrawal:
    """invoices.services.refund_handlers: send what arrived, less the network fee, back to the client.

    Called inside invoice_refund's transaction right after paid_amount was credited, so the hold of
    amount + fee (= paid_amount) always finds the balance. Errors name the refund endpoint's fields.
    """
    existing = Withdrawal.objects.filter(refund_invoice_id=invoice.pk).first()
    if existing is not None:
        return existing
    asset = get_asset(invoice.payment_code)
    with localcontext(MONEY_CONTEXT):
        net = invoice.paid_amount - asset.network_fee
    if net <= 0:
        raise ValidationFailed(
            [
                FieldError(
                    "amount",
                    "below_minimum",
                    f"{number_text(invoice.paid_amount)} {asset.code} does not cover the network fee",
                )
            ]
        )
    item = WithdrawalItem(asset=asset.code, to=invoice.refund_address, amount=net, tag=invoice.refund_tag)
    checked, errors = check_item(item)
    if errors:
        renamed = {"to": "address"}
        raise ValidationFailed([FieldError(renamed.get(e.field, e.field), e.code, e.message) for e in errors])
    assert checked is not None
    try:
        return withdrawal_accept(company=invoice.company, items=[checked], refund_invoice_id=invoice.pk)[0]
    except InsufficientBalance as exc:
        raise insufficient_errors(exc, [checked], lambda index: "amount") from exc

"""House refunds: an unrouted deposit sent back (chains.unrouted's refund handler). No merchant's balance
ever held it, so the payout is the house's own: a withdrawal with no company, no ledger hold and no merchant
webhook, paid by the one payout pipeline (plan, sign, store, send; its network fee booked to the house
account like every payout's). Completed or rejected, it tells chains.unrouted in the same commit."""

from __future__ import annotations

from chains.unrouted import refund_amount
from core.assets import get_asset
from core.errors import FieldError, ValidationFailed
from core.money import number_text
from payments.models import Deposit
from withdrawals.models import Withdrawal
from withdrawals.rules import WithdrawalItem, check_item
from withdrawals.services import PLAN_TASK

HOUSE_PREFIX = "000"  # company numbers start at 1: a house uid is never a merchant's


def withdrawal_refund_deposit(deposit: Deposit, to: str, tag: str, attempt: int) -> str:
    """chains.unrouted.refund_handlers: a house payout of what arrived, less the network fee, to `to`;
    returns its uid. Inside unrouted_refund's transaction, with the deposit locked; a database constraint
    keeps one live refund per deposit (withdrawal_one_live_deposit_refund). Errors name `to` and `amount`."""
    asset = get_asset(deposit.code)
    net = refund_amount(deposit)
    if net <= 0:
        raise ValidationFailed(
            [
                FieldError(
                    "amount",
                    "below_minimum",
                    f"{number_text(deposit.amount)} {asset.code} does not cover the network fee "
                    f"{number_text(asset.network_fee)}",
                )
            ]
        )
    checked, errors = check_item(WithdrawalItem(asset=asset.code, to=to, amount=net, tag=tag))
    if errors:
        raise ValidationFailed(errors)
    assert checked is not None
    withdrawal = Withdrawal.objects.create(
        uid=f"{HOUSE_PREFIX}-{deposit.pk}-{attempt}",
        company=None,
        code=checked.code,
        to_address=checked.to,
        tag=checked.tag,
        amount=checked.amount,
        fee=checked.fee,
        is_refund=True,
        refund_deposit=deposit,
    )
    PLAN_TASK.delay_on_commit(checked.code)
    return withdrawal.uid

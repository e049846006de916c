from typing import Any

from django.apps import AppConfig


class WithdrawalsConfig(AppConfig):
    name = "withdrawals"

    def ready(self) -> None:
        from core.metrics import register_scrape_part
        from withdrawals.metrics import payout_gauges

        register_scrape_part("payouts", payout_gauges)
        from chains import payout_book
        from chains import simulator as sandbox
        from invoices.services import refund_handlers
        from webhooks.families import register_payload_statuses
        from webhooks.models import WebhookEvent
        from withdrawals import tasks  # noqa: F401 - registers the tasks the services enqueue (core.enqueue.TaskRef)
        from withdrawals.auto_withdrawals import auto_withdrawal_sandbox_after_blocks
        from withdrawals.book import WithdrawalBook
        from withdrawals.events import WITHDRAWAL_STATUSES
        from withdrawals.payouts import payout_sandbox_after_blocks
        from withdrawals.refunds import withdrawal_refund_invoice

        register_payload_statuses(WebhookEvent.Family.WITHDRAWAL, WITHDRAWAL_STATUSES)
        payout_book.register(WithdrawalBook())  # what chains asks about payouts (status, fees, the signer)
        # Guarded: ready() may run more than once (tests that reload apps), a hook must not run twice.
        if withdrawal_refund_invoice not in refund_handlers:
            refund_handlers.append(withdrawal_refund_invoice)
        from chains import unrouted
        from withdrawals.house_refunds import withdrawal_refund_deposit

        if withdrawal_refund_deposit not in unrouted.refund_handlers:
            unrouted.refund_handlers.append(withdrawal_refund_deposit)
        # In this order: a sweep that just completed on chain frees its rule for the next sweep.
        for hook in (payout_sandbox_after_blocks, auto_withdrawal_sandbox_after_blocks):
            if hook not in sandbox.after_blocks:
                sandbox.after_blocks.append(hook)
        sandbox.commands["reject"] = sandbox.SandboxCommand(
            help="reject a processing sandbox withdrawal now (as if it failed on chain)",
            add_arguments=lambda parser: parser.add_argument("--uid", required=True, help="withdrawal uid"),
            run=_reject_now,
        )


def _reject_now(options: dict[str, Any]) -> dict[str, Any]:
    from core.errors import FieldError, ValidationFailed
    from withdrawals.models import Withdrawal
    from withdrawals.services import withdrawal_sandbox_reject

    withdrawal = Withdrawal.objects.select_related("company").filter(uid=options["uid"]).first()
    if withdrawal is None:
        raise ValidationFailed([FieldError("uid", "not_found", f"no withdrawal {options['uid']}")])
    withdrawal = withdrawal_sandbox_reject(company=withdrawal.company, uid=withdrawal.uid)
    return {"uid": withdrawal.uid, "status": withdrawal.status}

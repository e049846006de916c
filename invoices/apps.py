from django.apps import AppConfig


class InvoicesConfig(AppConfig):
    name = "invoices"

    def ready(self) -> None:
        from core.metrics import register_scrape_part
        from invoices.metrics import invoice_gauges

        register_scrape_part("invoices", invoice_gauges)
        from chains.deposits import register_deposit_handler
        from invoices.events import INVOICE_MESSAGES
        from invoices.services import InvoiceDepositHandler
        from payments.models import DepositAddress
        from webhooks.families import register_payload_statuses
        from webhooks.models import WebhookEvent

        register_deposit_handler(DepositAddress.Owner.INVOICE, InvoiceDepositHandler())
        from chains.unrouted import register_assign_target
        from invoices.selectors import invoice_deposit_address

        register_assign_target("invoice", invoice_deposit_address)
        register_payload_statuses(WebhookEvent.Family.INVOICE, INVOICE_MESSAGES)

        from chains import simulator as sandbox

        sandbox.commands["expire"] = sandbox.SandboxCommand(
            help="close a sandbox invoice now (as at expiry)",
            add_arguments=lambda parser: parser.add_argument("--invoice", required=True, help="invoice id"),
            run=_expire_now,
        )


def _expire_now(options: dict) -> dict:  # type: ignore[type-arg]
    from core.errors import FieldError, ValidationFailed
    from invoices.models import Invoice
    from invoices.services import invoice_close

    invoice = Invoice.objects.filter(pk=options["invoice"]).first() if _is_uuid(options["invoice"]) else None
    if invoice is None:
        raise ValidationFailed([FieldError("invoice", "not_found", f"no invoice {options['invoice']}")])
    invoice = invoice_close(invoice_id=invoice.pk, now=True)
    return {"invoiceId": str(invoice.pk), "status": invoice.status}


def _is_uuid(value: str) -> bool:
    import uuid

    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True

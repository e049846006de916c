from django.apps import AppConfig


class InvoicesConfig(AppConfig):
    name = "invoices"

    def ready(self) -> None:
        from invoices.services import InvoiceDepositHandler
        from payments.deposits import register_deposit_handler
        from payments.models import DepositAddress

        register_deposit_handler(DepositAddress.Owner.INVOICE, InvoiceDepositHandler())

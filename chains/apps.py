from django.apps import AppConfig


class ChainsConfig(AppConfig):
    """Payment networks behind one interface: backends, address validation and derivation, the sandbox."""

    name = "chains"

    def ready(self) -> None:
        from chains.metrics import chain_gauges
        from core.metrics import register_scrape_part

        register_scrape_part("chains", chain_gauges)
        from chains import (
            checks,  # noqa: F401 - registers the chain configuration checks
            static_deposits,  # noqa: F401 - registers the static address deposit handler
            unrouted,  # noqa: F401 - registers the handler of deposits no address owns
        )
        from chains.deposit_events import DEPOSIT_STATUSES
        from core.runtime import pin_recursion_limit
        from webhooks.families import register_payload_statuses
        from webhooks.models import WebhookEvent

        register_payload_statuses(WebhookEvent.Family.DEPOSIT, DEPOSIT_STATUSES)

        pin_recursion_limit()  # web3 (the EVM backend) raises it when imported

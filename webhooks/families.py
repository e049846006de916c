"""The `status` words each family's webhook bodies may carry, registered by the app that builds them
(invoices, withdrawals, chains) when it starts: webhooks lists them (the events API, its OpenAPI enum)
without importing the apps above it."""

from __future__ import annotations

from collections.abc import Iterable

_statuses: dict[str, tuple[str, ...]] = {}


def register_payload_statuses(family: str, statuses: Iterable[str]) -> None:
    _statuses[str(family)] = tuple(str(status) for status in statuses)  # plain strings, not enum members


def payload_statuses() -> list[str]:
    """Every `status` a webhook body can carry, of any family, sorted."""
    return sorted({status for statuses in _statuses.values() for status in statuses})

"""Two operators acting on one unrouted deposit at once: the deposit's row lock makes one of them win and
the other find it decided, so it is credited or paid back once. PostgreSQL only: SQLite runs one writer at
a time, so the race cannot happen there."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection, transaction

from chains.unrouted import Target, unrouted_assign, unrouted_refund
from core.errors import InvalidState
from payments.models import LedgerEntry
from tests.factories import InvoiceFactory, UnroutedDepositFactory
from tests.workers import wait_for
from withdrawals.models import Withdrawal

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _waiting_on_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
        return bool(cursor.fetchone()[0])


def _race(first: Callable[[], object], second: Callable[[], object]) -> list[str]:
    """`first` acts and holds its transaction open until `second` waits on its lock; what `second` got."""
    holding = threading.Event()
    outcome: list[str] = []

    def one() -> None:
        try:
            with transaction.atomic():
                first()
                holding.set()
                assert wait_for(_waiting_on_a_lock, timeout=30)
        finally:
            connection.close()

    def two() -> None:
        try:
            second()
            outcome.append("done")
        except InvalidState as exc:
            outcome.append(exc.detail)
        finally:
            connection.close()

    worker = threading.Thread(target=one)
    worker.start()
    assert holding.wait(timeout=30)
    other = threading.Thread(target=two)
    other.start()
    worker.join(timeout=60)
    other.join(timeout=60)
    return outcome


def test_two_assignments_at_once_credit_it_once(merchant) -> None:  # type: ignore[no-untyped-def]
    ann, bob = (InvoiceFactory(company=merchant.company, code="ton") for _ in range(2))
    unrouted = UnroutedDepositFactory(tag="", amount=ann.amount_due)

    outcome = _race(
        lambda: unrouted_assign(unrouted_id=unrouted.pk, target=Target("invoice", str(ann.pk)), by="ann"),
        lambda: unrouted_assign(unrouted_id=unrouted.pk, target=Target("invoice", str(bob.pk)), by="bob"),
    )

    assert outcome == ["Cannot assign an unrouted deposit that is assigned."]
    assert LedgerEntry.objects.filter(kind=LedgerEntry.Kind.INVOICE_CREDIT).count() == 1


def test_a_refund_racing_an_assignment_loses_and_pays_nothing(merchant) -> None:  # type: ignore[no-untyped-def]
    invoice = InvoiceFactory(company=merchant.company, code="ton")
    unrouted = UnroutedDepositFactory(tag="", amount=invoice.amount_due)

    outcome = _race(
        lambda: unrouted_assign(unrouted_id=unrouted.pk, target=Target("invoice", str(invoice.pk)), by="ann"),
        lambda: unrouted_refund(unrouted_id=unrouted.pk, by="bob"),
    )

    assert outcome == ["Cannot refund an unrouted deposit that is assigned."]
    assert not Withdrawal.objects.exists()

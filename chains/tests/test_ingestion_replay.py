"""A replayed ingestion (a worker killed after its batch committed, the next scan taking the same transfers
while another scanner still holds them) is normal: it advances what was recorded, quietly, with no
duplicate-key error anywhere. PostgreSQL only: SQLite runs one writer at a time, so the race cannot happen."""

from __future__ import annotations

import logging
import threading
from decimal import Decimal

import pytest
from django.db import connection, transaction

from chains.base import BlockRef, ChainTransfer
from chains.deposits import _ingest_batch, deposits_ingest
from core.assets import get_asset
from payments.models import Account, Deposit, QuarantinedTransfer
from tests.factories import StaticDepositAddressFactory
from tests.workers import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _waiting_on_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
        return bool(cursor.fetchone()[0])


def test_a_batch_ingested_again_while_its_first_ingestion_commits_logs_nothing_and_credits_once(caplog):
    static = StaticDepositAddressFactory(network="ltc")
    needed = get_asset("ltc").confirmations
    transfers = [
        ChainTransfer(
            "ltc",
            f"{n:064x}",
            0,
            static.deposit_address.address,
            "",
            Decimal("0.01"),
            needed,
            block=BlockRef(100, "ab" * 32),
        )
        for n in range(1, 103)
    ]
    holding, replayed = threading.Event(), threading.Event()
    outcome: list[object] = []

    def first() -> None:  # the killed worker's batch: written, its commit still to come
        try:
            with transaction.atomic():
                _ingest_batch("ltc", transfers)
                holding.set()
                assert wait_for(lambda: replayed.is_set() or _waiting_on_a_lock(), timeout=30)
        finally:
            connection.close()

    def again() -> None:  # the next scan, from the cursor the killed worker never advanced
        try:
            outcome.append(deposits_ingest("ltc", transfers))
        except Exception as exc:
            outcome.append(exc)
        finally:
            replayed.set()
            connection.close()

    with caplog.at_level(logging.DEBUG, logger="chains.deposits"):
        worker = threading.Thread(target=first)
        worker.start()
        assert holding.wait(timeout=30)
        scanner = threading.Thread(target=again)
        scanner.start()
        worker.join(timeout=60)
        scanner.join(timeout=60)

    assert outcome == [len(transfers)]
    assert Deposit.objects.filter(code="ltc").count() == len(transfers)
    assert not QuarantinedTransfer.objects.exists()
    account = Account.objects.get(company=static.company, code="ltc")
    assert account.available == Decimal("1.02")  # credited once
    noisy = [
        r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and r.name == "chains.deposits"
    ]
    assert noisy == []

"""One bad transfer or one failing chain never stops ingestion of the others (quarantine, log, retry)."""

from __future__ import annotations

import logging
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from chains.base import ScanResult
from chains.sandbox import SandboxBackend, new_txid
from chains.scanning import chain_scan
from chains.tasks import chain_scan_all
from payments.models import Account, Deposit, QuarantinedTransfer, SandboxTransaction

pytestmark = pytest.mark.django_db

STATIC = "/api/addresses/v1/static-deposits"


def _address(api, code: str, user: str = "user-1") -> str:
    response = api.post(STATIC, {"internal_user_id": user, "asset": code, "network": code}, format="json")
    assert response.status_code in (200, 201), response.content
    return response.json()["address"]


def _unseen_transfer(code: str, address: str, amount: str) -> SandboxTransaction:
    """A transfer on the sandbox chain that no poll has looked at yet (as a real node would report it)."""
    return SandboxTransaction.objects.create(
        code=code,
        txid=new_txid(),
        kind=SandboxTransaction.Kind.DEPOSIT,
        to_address=address,
        amount=Decimal(amount),
        block_height=None,
    )


def _available(company, code: str) -> Decimal:
    account = Account.objects.filter(company=company, code=code).first()
    return account.available if account else Decimal(0)


class BrokenBackend(SandboxBackend):
    """A chain backend whose node is down."""

    name = "broken"

    def scan(self, code: str, cursor: dict[str, object] | None) -> ScanResult:
        raise ConnectionError("node unreachable")


def test_bad_transfer_is_quarantined_and_others_ingested(api, merchant, caplog):
    address = _address(api, "btc")
    # More decimals than btc carries: the audit's value, which validation now refuses, arriving from a chain.
    bad = _unseen_transfer("btc", address, "123456789012345678.000000009999")
    good = _unseen_transfer("btc", address, "0.015")

    with caplog.at_level(logging.ERROR, logger="chains.deposits"):
        mined = api.post("/api/sandbox/blocks", {"count": 6}, format="json")

    assert mined.status_code == 200, mined.content
    assert Deposit.objects.get(txid=good.txid).status == Deposit.Status.CONFIRMED
    assert _available(merchant.company, "btc") == Decimal("0.015")
    held = QuarantinedTransfer.objects.get(txid=bad.txid)
    assert held.code == "btc" and held.attempts >= 1 and held.error
    assert held.retry_at > timezone.now()
    assert any("transfer quarantined" in record.getMessage() for record in caplog.records)


def test_quarantined_transfer_waits_then_is_retried_and_released(api, merchant, monkeypatch):
    address = _address(api, "btc")
    tx = _unseen_transfer("btc", address, "0.02")
    calls = []

    def failing_record(transfer, *args, **kwargs):
        calls.append(transfer.txid)
        raise RuntimeError("handler bug")

    # Where the batch and the one-by-one retry both pass: the batch fails, the retry fails and quarantines.
    monkeypatch.setattr("chains.deposits._new_deposit", failing_record)
    chain_scan("btc")
    chain_scan("btc")  # within the pause: not tried again
    assert calls == [tx.txid, tx.txid]  # its batch, then alone
    monkeypatch.undo()
    QuarantinedTransfer.objects.filter(txid=tx.txid).update(retry_at=timezone.now() - timedelta(seconds=1))

    chain_scan("btc")

    assert Deposit.objects.filter(txid=tx.txid).exists()
    assert not QuarantinedTransfer.objects.filter(txid=tx.txid).exists()


def test_one_failing_code_does_not_stop_the_scan_of_others(api, merchant, settings, caplog):
    eth_address = _address(api, "eth")
    tx = _unseen_transfer("eth", eth_address, "0.5")
    settings.CHAIN_BACKENDS = {"btc": "tests.test_ingestion_isolation.BrokenBackend"}

    with caplog.at_level(logging.ERROR, logger="chains.tasks"):
        chain_scan_all()

    assert Deposit.objects.filter(txid=tx.txid, code="eth").exists()
    assert any("chain scan of btc failed" in record.getMessage() for record in caplog.records)


def test_chain_quarantine_command_lists_quarantined_transfers(db):
    now = timezone.now()
    QuarantinedTransfer.objects.create(
        code="btc", txid="ab" * 32, output_index=1, error="InvalidAmount: x", last_failed_at=now, retry_at=now
    )

    with pytest.raises(CommandError, match="1 transfer"):
        call_command("chain_quarantine")

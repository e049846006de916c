"""`make bench` starts by removing what earlier runs' bench merchants left (tools.bench.cleanup): every row of
theirs goes, the scale merchants and every other merchant keep all of theirs, and the sandbox chain stays
whole. Runs on SQLite and on PostgreSQL (the bench's own table is not needed: the bench app is installed only
under tools.bench.settings)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import models
from django.test import Client
from rest_framework.test import APIClient

from chains.scanning import chain_scan
from core.assets import get_asset
from invoices.limits import underpayment_limits_set
from invoices.rules import underpayment_limits_check
from payments.models import (
    Company,
    SandboxBlock,
)
from payments.services import MerchantCredentials, company_set_webhook_url
from tests import chain
from tests.factories import (
    DepositFactory,
    InvoiceFactory,
    MerchantFactory,
    StaticDepositAddressFactory,
    WithdrawalFactory,
)
from tools.bench.cleanup import (
    BENCH_MERCHANT_NAME,
    bench_merchant_email,
    deletions,
    is_bench_email,
    purge_queues,
    remove_earlier_merchants,
)
from tools.bench.flows import mined_transfers, static_addresses
from tools.bench.scale import SCALE_MERCHANT, SMALL_MERCHANT
from webhooks.delivery import webhook_deliver
from webhooks.models import WebhookEvent
from withdrawals.auto_withdrawals import RuleInput, auto_withdrawal_rules_set
from withdrawals.tests.conftest import ADDRESSES

pytestmark = pytest.mark.django_db

# Kept on purpose: blocks stay (the chain's tip and the scan cursor, which stands at it, never move back).
KEPT_BLOCKS = SandboxBlock._meta.label
UNREACHABLE_HOOK = "http://127.0.0.1:9/hook"  # the discard port: nothing listens, the attempt fails at once


def _every_row() -> dict[str, set[Any]]:
    """The primary keys of every table, by model."""
    return {
        model._meta.label: set(model._default_manager.values_list("pk", flat=True))
        for model in apps.get_models(include_auto_created=True)
    }


def _merchant_rows(credentials: MerchantCredentials) -> None:
    """What a merchant of the bench accumulates, each through the service that makes it: a paid invoice
    (items, address, deposit, credit, events), withdrawals sent and mined (chain transactions, broadcasts),
    one a bulk request under an Idempotency-Key, a confirmed deposit to a static address, settings rows,
    a failed webhook attempt and a dashboard session."""
    company = credentials.company
    company_set_webhook_url(company_id=company.pk, url=UNREACHABLE_HOOK)
    invoice = InvoiceFactory(company=company, code="btc")
    chain.pay(invoice, invoice.amount_due, confirm=True)
    WithdrawalFactory(company=company, status="done")
    chain.fund(company, "btc", "1")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {credentials.public_token}")
    response = api.post(
        "/api/transactions/withdraw",
        {"items": [{"asset": "btc", "amount": "0.001", "to": ADDRESSES["btc"]}] * 2},
        format="json",
        headers={"Idempotency-Key": "bench-cleanup-test"},
    )
    assert response.status_code == 200, response.content
    chain.send_payouts("btc")  # settled, so a later merchant's mining changes none of these rows
    chain.mine("btc", get_asset("btc").confirmations)
    DepositFactory(address=StaticDepositAddressFactory(company=company), confirm=True)
    underpayment_limits_set(
        company=company, limits=underpayment_limits_check({"btc": {"static": "0.0001", "percentage": "1"}})
    )
    rule = RuleInput(amount=Decimal("0.01"), is_enabled=False, address=ADDRESSES["btc"], tag=None)
    auto_withdrawal_rules_set(company=company, rules={"btc": rule})
    pending = WebhookEvent.objects.filter(company=company, status=WebhookEvent.Status.PENDING)
    event = pending.order_by("created_at").first()  # the first of its object: nothing holds it back
    assert event is not None
    attempt = webhook_deliver(event_id=event.pk)
    assert attempt is not None and not attempt.succeeded
    Client().force_login(company.owner)


def _deposit_ingestion_rows(company: Company, run: str) -> None:
    """What the deposit_ingestion kind writes, the way it writes it (tools/bench/flows.py, scaled down):
    static addresses in bulk, transfers to them mined past their confirmations, then one chain scan."""
    addresses = static_addresses(company, "btc", run, 5)
    chain_scan("btc")
    mined_transfers("btc", run, addresses)
    assert chain_scan("btc") == len(addresses)


def test_every_row_of_the_earlier_bench_merchants_goes_and_every_other_row_stays(settings: Any) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True  # the failed attempt goes to loopback
    others = [
        MerchantFactory(name="Acme Shop", email="owner@acme.test"),
        MerchantFactory(name=SCALE_MERCHANT[1], email=SCALE_MERCHANT[2], password=None),
    ]
    small = MerchantFactory(name=SMALL_MERCHANT[1], email=SMALL_MERCHANT[2], password=None)
    for credentials in others:
        _merchant_rows(credentials)
    InvoiceFactory(company=small.company)
    before = _every_row()

    for run in ("0a1b2c3d", "4e5f6a7b"):  # two earlier runs
        bench = MerchantFactory(name=BENCH_MERCHANT_NAME, email=bench_merchant_email(), password=None)
        _merchant_rows(bench)
        _deposit_ingestion_rows(bench.company, run)
    with_bench = _every_row()
    added = {label: with_bench[label] - rows for label, rows in before.items() if with_bench[label] - rows}
    # The bench merchants touched every kind of row this cleanup is about (else the test proves less); the
    # sandbox books no house fee (HouseEntry), and admin log entries and group links come from no service.
    assert {label.split(".")[-1] for label in added} >= {
        "WebhookAttempt",
        "WebhookEvent",
        "SandboxTransaction",
        "Deposit",
        "InvoiceItem",
        "Invoice",
        "StaticDepositAddress",
        "DepositAddress",
        "WithdrawalTx",
        "ChainTx",
        "Withdrawal",
        "WithdrawalRequest",
        "WithdrawalCounter",
        "IdempotencyKey",
        "AutoWithdrawalRule",
        "UnderpaymentLimit",
        "LedgerEntry",
        "Account",
        "Company",
        "Session",
        "User",
    }

    removed = remove_earlier_merchants()

    after = _every_row()
    assert after[KEPT_BLOCKS] == with_bench[KEPT_BLOCKS] > before[KEPT_BLOCKS]
    changed = {label for label in before if after[label] != before[label]}
    assert changed == {KEPT_BLOCKS}, {label: after[label] ^ before[label] for label in changed}
    assert removed.merchants == 2
    assert removed.total == sum(len(rows) for label, rows in added.items() if label != KEPT_BLOCKS)
    assert removed.describe().startswith(f"removed 2 earlier bench merchants: {removed.total:,} rows")
    # The sandbox chain goes on: a new payment to a kept merchant's invoice is seen, credited and done.
    invoice = InvoiceFactory(company=others[0].company, code="btc")
    assert chain.pay(invoice, invoice.amount_due, confirm=True).status == "done"
    assert remove_earlier_merchants().describe() == "no earlier bench merchants to remove"


def test_every_table_that_references_a_bench_merchant_is_emptied_too() -> None:
    """Whatever references a company or its owner, directly or through another row, is in the DELETEs: a
    model added later with a foreign key to one of them fails this until the cleanup deletes it."""
    planned = {queryset.model for queryset in deletions([], [])}
    user_model = get_user_model()
    reachable: set[type[models.Model]] = set()
    todo: list[type[models.Model]] = [user_model]
    while todo:
        model = todo.pop()
        for relation in model._meta.related_objects:
            if relation.related_model not in reachable:
                reachable.add(relation.related_model)  # type: ignore[arg-type]
                todo.append(relation.related_model)  # type: ignore[arg-type]
    links = {m2m.remote_field.through for m2m in user_model._meta.many_to_many}
    assert reachable | links | {user_model} <= planned, reachable | links - planned


def test_only_the_runs_own_merchants_are_bench_merchants() -> None:
    assert is_bench_email(bench_merchant_email())
    assert not is_bench_email(SCALE_MERCHANT[2]) and not is_bench_email(SMALL_MERCHANT[2])
    assert not is_bench_email("bench-0123456789ab@bench.kassa.local.example.com")
    assert not is_bench_email("owner@acme.test")


def test_purging_empties_the_named_queues() -> None:
    from config.celery import app

    with app.producer_or_acquire() as producer:
        for _ in range(3):
            app.send_task("bench.nothing", queue="bench-cleanup-test", producer=producer)

    assert purge_queues(["bench-cleanup-test"]) == {"bench-cleanup-test": 3}
    assert purge_queues(["bench-cleanup-test"]) == {"bench-cleanup-test": 0}

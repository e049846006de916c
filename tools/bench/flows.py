"""The volume benchmark kinds: deposit ingestion, the expiry sweep and withdrawals (tools.bench.benchmarks
has the HTTP endpoints and webhook deliveries, registered first so the table keeps its order)."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from tools.bench.benchmarks import fund_quietly, insert_loop, rate_and_percentiles
from tools.bench.core import BenchContext, Result, benchmark, with_ratios
from tools.bench.endpoints import BENCH_BTC_ADDRESS

if TYPE_CHECKING:
    from payments.models import Company, DepositAddress


DEPOSIT_ADDRESSES = 100_000
DEPOSIT_TRANSFERS = 5000


@benchmark
def deposit_ingestion(ctx: BenchContext) -> list[Result]:
    """Transfers/s through the real ingestion pipeline: one `chain_scan` of the sandbox chain (scan, route
    among 100,000 static addresses, record, credit, two webhook events each, recheck, cursor) over 5,000
    transfers mined past their confirmations, against a loop of one-row inserts, each in its own
    transaction, measured in the same run."""
    import secrets
    import time

    from django.db import connection

    from chains.scanning import chain_scan
    from core.offer import on_sandbox_backend
    from payments.models import (
        Company,
        Deposit,
        LedgerEntry,
    )
    from webhooks.models import WebhookEvent

    code = "btc"
    if not on_sandbox_backend(code):
        return [Result("deposit ingest", None, failures=[f"{code} is not on the sandbox backend here"])]
    company = Company.objects.get(pk=ctx.company_id)
    company.webhook_url = ""  # events are recorded (skipped): no broker traffic in the measurement
    company.save(update_fields=["webhook_url"])
    run = secrets.token_hex(4)
    addresses = static_addresses(company, code, run, DEPOSIT_ADDRESSES)
    if connection.vendor == "postgresql":
        # Fresh statistics for the 100,000 rows just added, as autovacuum keeps them in production: with the
        # estimates of an empty table the planner scans every address instead of using the route index.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE payments_depositaddress, payments_staticdepositaddress")
    targets = [addresses[i * (DEPOSIT_ADDRESSES // DEPOSIT_TRANSFERS)] for i in range(DEPOSIT_TRANSFERS)]
    # The 100,000 instances stay in the database, not in this process: a worker that scans holds none of
    # them, and every garbage collection during the measured scan would walk them all.
    del addresses
    chain_scan(code)  # whatever an earlier run left open is settled before the measured scan
    mined_transfers(code, run, targets)  # mined deep enough to be credited by the first scan

    baseline = insert_loop(company.pk, DEPOSIT_TRANSFERS)

    t0 = time.perf_counter()
    ingested = chain_scan(code)
    elapsed = time.perf_counter() - t0

    txids = [f"{run}-{index:08d}" for index in range(DEPOSIT_TRANSFERS)]
    deposits = Deposit.objects.filter(code=code, txid__in=txids)
    failures = []
    if ingested != DEPOSIT_TRANSFERS:
        failures.append(f"the scan ingested {ingested} of {DEPOSIT_TRANSFERS} transfers")
    if (confirmed := deposits.filter(status=Deposit.Status.CONFIRMED).count()) != DEPOSIT_TRANSFERS:
        failures.append(f"{confirmed} of {DEPOSIT_TRANSFERS} deposits confirmed")
    references = [f"deposit:{pk}" for pk in deposits.values_list("pk", flat=True)]
    if (credits := LedgerEntry.objects.filter(reference__in=references).count()) != DEPOSIT_TRANSFERS:
        failures.append(f"{credits} of {DEPOSIT_TRANSFERS} deposits credited")
    events = WebhookEvent.objects.filter(
        object_id__in=[r.removeprefix("deposit:") for r in references]
    ).count()
    if events != 2 * DEPOSIT_TRANSFERS:
        failures.append(f"{events} webhook events for {DEPOSIT_TRANSFERS} deposits (expected two each)")

    result = Result(
        f"deposit ingest, one scan ({DEPOSIT_TRANSFERS:,} tx, {DEPOSIT_ADDRESSES:,} addr)",
        DEPOSIT_TRANSFERS / elapsed,
        failures=failures[:5],
    )
    return with_ratios([baseline, result], baseline="one-row insert loop")


def static_addresses(company: Company, code: str, run: str, count: int) -> list[DepositAddress]:
    """`count` static deposit addresses of `company` (named after the run), written in bulk."""
    from django.db import transaction

    from payments.models import DepositAddress, StaticDepositAddress

    with transaction.atomic():
        addresses = DepositAddress.objects.bulk_create(
            [
                DepositAddress(
                    company=company,
                    code=code,
                    address=f"bench-{run}-{i}",
                    route_key=f"bench-{run}-{i}",
                    tag="",
                    derivation_index=i,
                    owner="static",
                )
                for i in range(count)
            ],
            batch_size=5000,
        )
        StaticDepositAddress.objects.bulk_create(
            [
                StaticDepositAddress(
                    company=company, deposit_address=a, code=code, internal_user_id=a.address
                )
                for a in addresses
            ],
            batch_size=5000,
        )
    return addresses


def mined_transfers(code: str, run: str, targets: list[DepositAddress]) -> None:
    """A sandbox transfer of 0.001 to each target, in a new block, with as many blocks on top as the asset
    needs to confirm: the next chain scan sees each transfer confirmed at once."""

    from django.db import transaction

    from chains.sandbox import tip_height
    from core.assets import get_asset
    from payments.models import SandboxBlock, SandboxTransaction

    with transaction.atomic():
        tip = tip_height(code)
        confirmations = get_asset(code).confirmations
        SandboxBlock.objects.bulk_create(
            [SandboxBlock(code=code, height=tip + offset) for offset in range(1, confirmations + 1)]
        )
        SandboxTransaction.objects.bulk_create(
            [
                SandboxTransaction(
                    code=code,
                    txid=f"{run}-{index:08d}",
                    kind=SandboxTransaction.Kind.DEPOSIT,
                    from_address="bench-payer",
                    to_address=target.address,
                    amount=Decimal("0.001"),
                    block_height=tip + 1,
                )
                for index, target in enumerate(targets)
            ],
            batch_size=5000,
        )


EXPIRY_INVOICES = 100_000


@benchmark
def expiry_sweep(ctx: BenchContext) -> list[Result]:
    """Seconds to close 100,000 overdue invoices with their webhook events, against a bare set-based UPDATE of
    as many rows measured in the same run (rows/s)."""
    import time
    from datetime import timedelta

    from django.db import transaction
    from django.utils import timezone

    from core.bulkinsert import bulk_insert
    from invoices.models import Invoice
    from invoices.services import close_overdue_invoices
    from payments.models import Company
    from webhooks.models import WebhookEvent

    company = Company.objects.get(pk=ctx.company_id)
    company.webhook_url = ""  # events recorded as skipped: the sweep, not the broker, is measured
    company.save(update_fields=["webhook_url"])
    past = timezone.now() - timedelta(hours=1)

    def overdue() -> list[Invoice]:
        return [
            Invoice(
                company=company,
                status="pending",
                invoice_currency="usd",
                total=Decimal(10),
                payment_code="btc",
                client_email="c@example.com",
                filled_at=past,
                expired_at=past,
            )
            for _ in range(EXPIRY_INVOICES)
        ]

    # Written with COPY (bulk_insert): a VALUES list of 100,000 rows would pass PostgreSQL's limit of 65,535
    # values per statement under server-side binding. The baseline closes exactly these rows, by condition.
    pending = Invoice.objects.filter(company=company, status="pending")
    pending.update(status="closed")
    with transaction.atomic():
        bulk_insert(overdue())
    t0 = time.perf_counter()
    with transaction.atomic():
        pending.update(status="closed")
    baseline_s = time.perf_counter() - t0

    with transaction.atomic():
        bulk_insert(overdue())
    events_before = WebhookEvent.objects.filter(company=company, event_status="closed").count()
    t0 = time.perf_counter()
    closed = close_overdue_invoices()
    sweep_s = time.perf_counter() - t0
    events = WebhookEvent.objects.filter(company=company, event_status="closed").count() - events_before

    failures = []
    if closed != EXPIRY_INVOICES or events != EXPIRY_INVOICES:
        failures.append(f"closed {closed} invoices with {events} events, expected {EXPIRY_INVOICES} of each")
    baseline = Result(f"bare UPDATE of {EXPIRY_INVOICES:,} rows", EXPIRY_INVOICES / baseline_s)
    sweep = Result(
        f"expiry sweep {EXPIRY_INVOICES:,} ({sweep_s:.1f} s)", EXPIRY_INVOICES / sweep_s, failures=failures
    )
    return with_ratios([baseline, sweep], baseline=baseline.name)


WITHDRAWAL_BULK_ITEMS = 1000
WITHDRAWAL_SINGLES = 300
WITHDRAWAL_BULK_CALLS = 3  # the row shows the median call: one call alone swings by a third on a busy host


class _InMemoryBroker:
    """Broadcast messages go to an in-memory broker in this process while measuring, not to var/broker:
    the bench database's uids must not land in the developer's queue (1,300 messages a `make run` worker
    would chew through). The enqueue cost stays in the numbers, at in-memory price."""

    def __enter__(self) -> None:
        from config.celery import app

        self.previous = app.conf.broker_url
        app.conf.broker_url = "memory://"
        self._drop_pools()

    def __exit__(self, *exc: object) -> None:
        from config.celery import app

        app.conf.broker_url = self.previous
        self._drop_pools()

    @staticmethod
    def _drop_pools() -> None:
        from config.celery import app

        app._pool = None  # the next message opens a pool for the current broker_url
        app.amqp._producer_pool = None


@benchmark
def withdrawals(ctx: BenchContext) -> list[Result]:
    """A 1,000-item bulk withdrawal through the service (rules and address checks, holds, rows, webhooks,
    broadcast messages) in items/s (the median of three calls, after a one-item warm-up), and single
    withdrawals/s, each against a loop of one-row inserts (one transaction each) measured in the same run."""
    import time

    from core.assets import get_asset
    from payments.models import Company
    from withdrawals.rules import WithdrawalItem
    from withdrawals.services import withdrawal_request

    item = WithdrawalItem(asset="btc", to=BENCH_BTC_ADDRESS, amount=get_asset("btc").min_withdrawal)
    each = item.amount + get_asset("btc").network_fee
    calls = WITHDRAWAL_BULK_ITEMS * WITHDRAWAL_BULK_CALLS + WITHDRAWAL_SINGLES + 1
    fund_quietly(ctx, "btc", each * calls, "withdrawals")
    company = Company.objects.get(pk=ctx.company_id)

    baseline = insert_loop(company.pk, WITHDRAWAL_BULK_ITEMS)

    failures = []
    with _InMemoryBroker():
        # A long-running server has taken withdrawals before: its imports, statement plans and caches are
        # warm, as the HTTP rows' warm-up makes them.
        withdrawal_request(company=company, items=[item])
        bulk_timings = []
        for _ in range(WITHDRAWAL_BULK_CALLS):
            t0 = time.perf_counter()
            bulk = withdrawal_request(company=company, items=[item] * WITHDRAWAL_BULK_ITEMS)
            bulk_timings.append(time.perf_counter() - t0)
            if len(bulk) != WITHDRAWAL_BULK_ITEMS:
                failures.append(f"a bulk call accepted {len(bulk)} of {WITHDRAWAL_BULK_ITEMS} items")
        bulk_s = sorted(bulk_timings)[len(bulk_timings) // 2]
        timings = []
        for _ in range(WITHDRAWAL_SINGLES):
            t0 = time.perf_counter()
            single = withdrawal_request(company=company, items=[item])
            timings.append(time.perf_counter() - t0)
            if len(single) != 1:
                failures.append("a single withdrawal was not accepted")

    rate, p50, p99 = rate_and_percentiles(timings)
    bulk_row = Result(
        f"bulk withdraw {WITHDRAWAL_BULK_ITEMS:,} items (median {bulk_s:.2f} s), items/s",
        WITHDRAWAL_BULK_ITEMS / bulk_s,
        failures=failures[:5],
    )
    singles = Result("single withdrawals", rate, p50_ms=p50, p99_ms=p99, failures=failures[:5])
    return with_ratios([baseline, bulk_row, singles], baseline="one-row insert loop")


from tools.bench import scale  # noqa: E402,F401 - registers the scale kind, after the kinds above

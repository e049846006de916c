"""The registered benchmark kinds. A new kind is one more `@benchmark` function here.

A kind gets the running service and a merchant (`BenchContext`) and returns table rows whose `ratio` is
against a baseline it measured itself in the same run, e.g. a service call in a loop over a bare
`BaselineRow.objects.create` loop (Django is set up in this process with the bench settings).
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from tools.bench import wrk
from tools.bench.core import BenchContext, Result, WrkSettings, benchmark, with_ratios
from tools.bench.endpoints import BASELINE, BENCH_BTC_ADDRESS, ENDPOINTS, HttpEndpoint
from tools.bench.server import settle_database

if TYPE_CHECKING:
    from payments.models import Company, DepositAddress


# Each endpoint is measured this many times, each time right after a run of its baseline; its row shows the
# medians of its runs, and its ratios the medians of those pairs' ratios. One 5-second run of one endpoint
# swings by a fifth or more on a shared host (a checkpoint, a neighbour, the host's speed drifting within a
# minute), and a ratio of two runs half a minute apart by twice that: a pair measured back to back shares
# the host's state.
HTTP_ROUNDS = 3


@benchmark
def http_endpoints(ctx: BenchContext) -> list[Result]:
    """Each entry of `ENDPOINTS` under wrk, `HTTP_ROUNDS` times, each time right after its baseline: a
    warm-up run, then the measured one; each row shows the median rate, p50 and p99 of its runs, and each
    endpoint's ratios are the medians of its runs' ratios to the baseline run just before them (a baseline
    runs only as the first of its pairs)."""
    wrk_path = wrk.ensure_wrk()
    placeholders = {"invoice_id": _filled_invoice(ctx), "baseline_row": _baseline_row(ctx)}
    _fund_quietly(ctx, "btc", Decimal(1000), "http-withdrawals")  # enough for every request wrk can make
    runs: dict[str, list[wrk.WrkReport]] = {}
    failures: dict[str, list[str]] = {}
    scripts: dict[str, tuple[HttpEndpoint, Path]] = {}
    for index, raw_endpoint in enumerate(ENDPOINTS):
        endpoint = replace(raw_endpoint, path=raw_endpoint.path.format(**placeholders))
        body = None if endpoint.body is None else json.dumps(endpoint.body)
        headers = _headers(endpoint, ctx, has_body=body is not None)
        # One request by hand first: a wrong token or body then fails with the answer shown, not a count.
        problem = _preflight(ctx.base_url, endpoint, body, headers)
        runs[endpoint.name], failures[endpoint.name] = [], [problem] if problem else []
        if not problem:
            path = Path(ctx.workdir) / f"endpoint-{index}.lua"
            scripts[endpoint.name] = (
                endpoint,
                wrk.write_script(
                    path, method=endpoint.method, body=body, headers=headers, clients=endpoint.clients
                ),
            )

    def measure(name: str, settings: WrkSettings, *, keep: bool = True) -> wrk.WrkReport | None:
        if name not in scripts or failures[name]:
            return None
        endpoint, script = scripts[name]
        url = ctx.base_url + endpoint.path
        settle_database()  # the previous run's writes vacuumed and flushed, not measured here
        try:
            # Warm-up fills connection pools, caches and imports in every worker; its numbers are dropped.
            wrk.run(wrk_path, url, script, settings, duration_s=settings.warmup_s)
            report = wrk.run(wrk_path, url, script, settings, duration_s=settings.duration_s)
        except wrk.WrkError as exc:
            failures[name].append(str(exc))
            return None
        if keep:
            runs[name].append(report)
        failures[name] += report.failures()
        return None if report.failures() else report

    paired = {e.name: e.baseline for e in ENDPOINTS if e.baseline != e.name}
    pairs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in paired}
    for _ in range(HTTP_ROUNDS):
        for name, baseline_name in paired.items():
            base, report = measure(baseline_name, ctx.wrk), measure(name, ctx.wrk)
            if (
                base is not None
                and report is not None
                and base.requests_per_s
                and base.p50_ms
                and base.p99_ms
            ):
                pairs[name].append(
                    (
                        report.requests_per_s / base.requests_per_s,
                        report.p50_ms / base.p50_ms,
                        report.p99_ms / base.p99_ms,
                    )
                )
    results = []
    for raw_endpoint in ENDPOINTS:
        name, reports = raw_endpoint.name, runs[raw_endpoint.name]
        if failures[name] or not reports:
            results.append(Result(name, None, failures=failures[name] or ["not measured"]))
            continue
        ratios = pairs.get(name, [])
        results.append(
            Result(
                name,
                _median([r.requests_per_s for r in reports]),
                p50_ms=_median([r.p50_ms for r in reports]),
                p99_ms=_median([r.p99_ms for r in reports]),
                ratio=_median([ratio for ratio, _, _ in ratios]) if ratios else None,
                p50_ratio=_median([p50 for _, p50, _ in ratios]) if ratios else None,
                p99_ratio=_median([p99 for _, _, p99 in ratios]) if ratios else None,
                baseline=raw_endpoint.baseline,
            )
        )
    if ctx.wrk.connections > 1:
        results += _one_connection(paired, lambda name: measure(name, ONE_CONNECTION, keep=False))
    return with_ratios(results, baseline=BASELINE)


# The same endpoints once more with one connection, each right after its baseline: no request waits behind
# another, so `p50 x` is what one request costs against the baseline's one request. Reported, not judged.
ONE_CONNECTION = WrkSettings(threads=1, connections=1)
ONE_CONNECTION_SUFFIX = " @1 connection"


def _one_connection(paired: dict[str, str], measure: Callable[[str], wrk.WrkReport | None]) -> list[Result]:
    """Each endpoint right after its own baseline run, with its ratios to that run; each baseline's first
    run."""
    results: dict[str, Result] = {}
    for name, baseline_name in paired.items():
        base, report = measure(baseline_name), measure(name)
        if base is not None:
            results.setdefault(baseline_name, _row(baseline_name, base, baseline_name))
        row = _row(name, report, baseline_name)
        if base is not None and report is not None and base.requests_per_s and base.p50_ms and base.p99_ms:
            row.ratio = report.requests_per_s / base.requests_per_s
            row.p50_ratio = report.p50_ms / base.p50_ms
            row.p99_ratio = report.p99_ms / base.p99_ms
        results[name] = row
    return list(results.values())


def _row(name: str, report: wrk.WrkReport | None, baseline: str) -> Result:
    label, of = name + ONE_CONNECTION_SUFFIX, baseline + ONE_CONNECTION_SUFFIX
    if report is None:
        return Result(label, None, baseline=of, failures=["not measured"])
    return Result(label, report.requests_per_s, p50_ms=report.p50_ms, p99_ms=report.p99_ms, baseline=of)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _baseline_row(ctx: BenchContext) -> str:
    from tools.bench.models import BaselineRow

    return str(BaselineRow.objects.create(company_id=ctx.company_id).pk)


def _fund_quietly(ctx: BenchContext, code: str, amount: Decimal, purpose: str) -> None:
    """Credit the bench merchant `amount` of `code` for withdrawals, and take its webhook URL away: their
    events are recorded (skipped), with no delivery traffic in the measurement."""
    import secrets

    from payments.ledger import ledger_credit
    from payments.models import Company, LedgerEntry

    Company.objects.filter(pk=ctx.company_id).update(webhook_url="")
    ledger_credit(
        company_id=ctx.company_id,
        code=code,
        amount=amount,
        kind=LedgerEntry.Kind.ADJUSTMENT,
        reference=f"bench-{purpose}:{secrets.token_hex(4)}",
    )


def _filled_invoice(ctx: BenchContext) -> str:
    """A pending invoice (items, address, rate) for the public GET: the heaviest read a client makes."""
    from decimal import Decimal

    from invoices.services import ItemInput, invoice_create, invoice_fill
    from payments.models import Company

    company = Company.objects.get(pk=ctx.company_id)
    items = [ItemInput(name=f"Item {i}", price=Decimal("2.50")) for i in range(5)]
    invoice = invoice_create(company=company, invoice_currency="usd", items=items)
    invoice_fill(invoice_id=invoice.pk, client_email="client@example.com", payment_currency="btc")
    return str(invoice.pk)


def _headers(endpoint: HttpEndpoint, ctx: BenchContext, *, has_body: bool) -> dict[str, str]:
    headers = {}
    if endpoint.auth:
        headers["Authorization"] = f"Bearer {ctx.token}"
    if has_body:
        headers["Content-Type"] = "application/json"
    headers.update(endpoint.headers)
    return headers


def _preflight(
    base_url: str, endpoint: HttpEndpoint, body: str | None, headers: dict[str, str]
) -> str | None:
    """None when one request answers 2xx; otherwise what went wrong, with the start of the answer."""
    parts = urlsplit(base_url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    try:
        conn.request(endpoint.method, endpoint.path, body=body, headers=headers)
        response = conn.getresponse()
        answer = response.read(500).decode(errors="replace")
    except OSError as exc:
        return f"{endpoint.method} {endpoint.path} failed: {exc}"
    finally:
        conn.close()
    if not 200 <= response.status < 300:
        return f"{endpoint.method} {endpoint.path} answered {response.status}: {answer}"
    return None


WEBHOOK_EVENTS = 300


def _insert_loop(company_id: object, count: int) -> Result:
    """The in-process baseline row: `count` one-row inserts, each in its own transaction."""
    import time

    from django.db import transaction

    from tools.bench.models import BaselineRow

    timings = []
    for _ in range(count):
        t0 = time.perf_counter()
        with transaction.atomic():
            BaselineRow.objects.create(company_id=company_id)
        timings.append(time.perf_counter() - t0)
    rate, p50, p99 = _rate_and_percentiles(timings)
    return Result("one-row insert loop", rate, p50_ms=p50, p99_ms=p99)


def _rate_and_percentiles(timings: list[float]) -> tuple[float, float, float]:
    ordered = sorted(timings)
    return (
        len(timings) / sum(timings),
        ordered[len(ordered) // 2] * 1000,
        ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
    )


# Each round: a signed-POST loop, then as many deliveries, back to back; the rows show the medians of the
# rounds, the ratios the medians of each round's ratio. One round of 300 swings by a tenth and more.
WEBHOOK_ROUNDS = 5


@benchmark
def webhook_delivery(ctx: BenchContext) -> list[Result]:
    """Deliveries/s through the outbox (claim, sign, POST, record) against a plain loop of signed POSTs.

    Both run sequentially in this process against the same local receiver, which keeps connections alive
    (HTTP/1.1, as most receivers do). Delivery reuses a receiver's connection; the baseline, `requests.post`
    per webhook as a plain script would send them, opens one per POST. `WEBHOOK_ROUNDS` rounds of
    `WEBHOOK_EVENTS` each, the baseline first in each.
    """
    from payments.models import Company
    from payments.services import company_signing_secret
    from webhooks.receiver import WebhookReceiver

    company = Company.objects.get(pk=ctx.company_id)
    secret = company_signing_secret(company)
    rounds: list[tuple[list[float], list[float]]] = []
    failures: list[str] = []
    with WebhookReceiver(secret=secret, keep_alive=True) as receiver:
        for round_index in range(WEBHOOK_ROUNDS):
            baseline_timings = _signed_post_loop(receiver.url, secret, f"b{round_index}")
            timings = _delivery_loop(company, receiver.url, f"d{round_index}", failures)
            rounds.append((baseline_timings, timings))
        bad_signatures = sum(1 for got in receiver.received if got.verified is False)
    if bad_signatures:
        failures.append(f"{bad_signatures} webhooks failed signature verification at the receiver")

    measured = [(_rate_and_percentiles(base), _rate_and_percentiles(sent)) for base, sent in rounds]
    baseline = Result(
        "signed POST loop",
        _median([base[0] for base, _ in measured]),
        p50_ms=_median([base[1] for base, _ in measured]),
        p99_ms=_median([base[2] for base, _ in measured]),
    )
    delivered = Result(
        "webhook deliveries",
        _median([sent[0] for _, sent in measured]),
        p50_ms=_median([sent[1] for _, sent in measured]),
        p99_ms=_median([sent[2] for _, sent in measured]),
        ratio=_median([sent[0] / base[0] for base, sent in measured]),
        p99_ratio=_median([sent[2] / base[2] for base, sent in measured]),
        failures=failures[:5],
    )
    return with_ratios([baseline, delivered], baseline="signed POST loop")


def _signed_post_loop(url: str, secret: str, run: str) -> list[float]:
    """The baseline: `WEBHOOK_EVENTS` signed POSTs, one `requests.post` each; the time of each."""
    import time

    import requests

    from invoices.events import invoice_body
    from webhooks.signing import signed_headers

    timings = []
    for index in range(WEBHOOK_EVENTS):
        body = json.dumps(invoice_body(invoice_id=f"{run}-{index}", status="created"), separators=(",", ":"))
        t0 = time.perf_counter()
        headers = {
            "Content-Type": "application/json",
            **signed_headers(secret, f"{run}-{index}", int(time.time()), body.encode()),
        }
        requests.post(url, data=body, headers=headers, timeout=10).raise_for_status()
        timings.append(time.perf_counter() - t0)
    return timings


def _delivery_loop(company: Company, url: str, run: str, failures: list[str]) -> list[float]:
    """`WEBHOOK_EVENTS` events delivered one after the other by `webhook_deliver`; the time of each."""
    import time

    from django.db import transaction
    from django.utils import timezone

    from invoices.events import invoice_body
    from payments.services import company_set_webhook_url
    from webhooks.delivery import webhook_deliver
    from webhooks.models import WebhookEvent
    from webhooks.services import webhook_publish

    # Published with no URL set (skipped, so no broker message leaves), then made due for this loop.
    company_set_webhook_url(company_id=company.pk, url="")
    company.refresh_from_db()
    with transaction.atomic():
        ids = [
            webhook_publish(
                company=company,
                family="invoice",
                object_id=f"{run}-{index}",
                body=invoice_body(invoice_id=f"{run}-{index}", status="created"),
            ).pk
            for index in range(WEBHOOK_EVENTS)
        ]
    company_set_webhook_url(company_id=company.pk, url=url)
    WebhookEvent.objects.filter(pk__in=ids).update(status="pending", next_attempt_at=timezone.now())
    timings = []
    for event_id in ids:
        t0 = time.perf_counter()
        attempt = webhook_deliver(event_id=event_id)
        timings.append(time.perf_counter() - t0)
        if attempt is None or not attempt.succeeded:
            failures.append(f"event {event_id}: {attempt.error if attempt else 'not claimed'}")
    return timings


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

    baseline = _insert_loop(company.pk, DEPOSIT_TRANSFERS)

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
    from decimal import Decimal

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
    from decimal import Decimal

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
    _fund_quietly(ctx, "btc", each * calls, "withdrawals")
    company = Company.objects.get(pk=ctx.company_id)

    baseline = _insert_loop(company.pk, WITHDRAWAL_BULK_ITEMS)

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

    rate, p50, p99 = _rate_and_percentiles(timings)
    bulk_row = Result(
        f"bulk withdraw {WITHDRAWAL_BULK_ITEMS:,} items (median {bulk_s:.2f} s), items/s",
        WITHDRAWAL_BULK_ITEMS / bulk_s,
        failures=failures[:5],
    )
    singles = Result("single withdrawals", rate, p50_ms=p50, p99_ms=p99, failures=failures[:5])
    return with_ratios([baseline, bulk_row, singles], baseline="one-row insert loop")


from tools.bench import scale  # noqa: E402,F401 - registers the scale kind, after the kinds above

"""The registered benchmark kinds (more in tools.bench.flows): a new kind is one more `@benchmark` function.

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
from tools.bench.endpoints import BASELINE, ENDPOINTS, HttpEndpoint
from tools.bench.server import settle_database

if TYPE_CHECKING:
    from payments.models import Company


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
    fund_quietly(ctx, "btc", Decimal(1000), "http-withdrawals")  # enough for every request wrk can make
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


def fund_quietly(ctx: BenchContext, code: str, amount: Decimal, purpose: str) -> None:
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


def insert_loop(company_id: object, count: int) -> Result:
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
    rate, p50, p99 = rate_and_percentiles(timings)
    return Result("one-row insert loop", rate, p50_ms=p50, p99_ms=p99)


def rate_and_percentiles(timings: list[float]) -> tuple[float, float, float]:
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

    measured = [(rate_and_percentiles(base), rate_and_percentiles(sent)) for base, sent in rounds]
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

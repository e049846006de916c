"""The `scale` kind: does the cost of invoice create, invoice read and the list pages grow with the table?

A merchant with a million invoices and a million webhook events is measured beside one with 120 of each,
request by request, in this process (Django's test client, no gunicorn, no wrk: the difference to see is
the database's work, not the server's). Each "1M rows" row is divided by its "small merchant" row, so a
ratio near 1.00 says the cost does not grow with the table. Two rows are there for contrast and are expected
to grow: an `offset=` page (the database reads every skipped row) and the first page with its total count
(it counts every matching row).

The million rows are written once by set-based SQL (`INSERT ... SELECT ... FROM generate_series`) and kept
in the bench database: later runs reuse them, so the database does not grow by a million rows a run.
The plans of the list queries go to var/bench/explain-<time>.txt. A deep keyset page whose plan scans a big
table without an index fails its row; a plan that reads far more rows than a page is printed as a warning
(its numbers are right, what grows is the query's shape).

PostgreSQL only: SQLite would measure its own single-file limits rather than the query shapes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.bench.core import BenchContext, Result, benchmark, with_ratios
from tools.bench.scale_sql import (
    insert_select_sql,
    median_ms,
    page_depth,
    plan_gist,
    plan_problems,
    rows_read,
    template_params,
)

if TYPE_CHECKING:
    from django.db.models import Model, QuerySet
    from django.http import HttpResponseBase
    from django.test import Client

    from payments.models import Company

SCALE_ROWS = 1_000_000
SMALL_ROWS = 120  # more than two pages of 50, so both merchants' pages are full and serialise alike
DEPTH = 900_000  # how deep the "deep page" starts (capped by what the merchant has)
PAGE = 50  # the API's `limit`
WARMUPS = 3
REQUESTS = 30
SLOW_WARMUPS, SLOW_REQUESTS = 1, 5  # the contrast rows read ~a million rows per request: a few are enough
SMALL, BIG = "small merchant", "1M rows"  # the row labels
# Both kept across runs. The small one is not the run's bench merchant: after the other kinds that one holds
# 200,000 invoices (the expiry sweep's), and with BENCH_ONLY=scale none, so pages would not be alike.
SCALE_MERCHANT = (BIG, "Scale Shop", "scale@bench.kassa.local")
SMALL_MERCHANT = (SMALL, "Scale Small Shop", "scale-small@bench.kassa.local")
# JSON text, not a dict: the price stays the exact number 4.5 on the wire, never a Python float.
INVOICE_BODY = '{"invoiceCurrency": "usd", "items": [{"name": "Coffee", "price": 4.5}]}'
_ID_MARK = "00000000-0000-0000-0000-000000000000"  # in the template event body, replaced by each row's id


# --- the merchants and their rows ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Merchant:
    label: str
    company: Company
    token: str


def _merchant(label: str, name: str, email: str) -> Merchant:
    """The merchant of `email`, created once and reused (with a fresh token: the old one is only stored as a
    hash). Its webhook URL stays empty, so created invoices' events are skipped, never sent to the broker."""
    from django.contrib.auth import get_user_model

    from payments.models import Company
    from payments.services import company_create, company_rotate_token, merchant_create

    user = get_user_model().objects.filter(username=email).first()
    company = Company.objects.filter(owner=user).first() if user else None
    if user is None:
        created = merchant_create(name=name, email=email)
        company, token = created.company, created.public_token
    elif company is None:
        created = company_create(owner=user, name=name)
        company, token = created.company, created.public_token
    else:
        token = company_rotate_token(company_id=company.pk)
    Company.objects.filter(pk=company.pk).update(webhook_url="")
    company.refresh_from_db()
    return Merchant(label=label, company=company, token=token)


def _template_values(obj: Model) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    """Every concrete column of `obj`'s table with its cast type, and the value Django would save for it:
    the generic way to give each NOT NULL column a valid value, whatever columns a migration adds."""
    from django.db import connection

    columns, values = [], {}
    for field in obj._meta.concrete_fields:
        column, cast = field.column, field.cast_db_type(connection)
        assert column and cast, f"{field} has a column of a known type"
        columns.append((column, cast))
        values[column] = field.get_db_prep_save(field.pre_save(obj, add=True), connection)
    return columns, values


def _invoice_template(company: Company) -> tuple[Model, dict[str, str]]:
    """A created invoice (no client details, no address: it renders in every status), its status cycling
    through all of them. expired_at stays NULL: no generated invoice is ever overdue, so the expiry sweep
    (and its bench kind) never touches them."""
    from decimal import Decimal

    from invoices.models import Invoice, InvoiceStatus

    statuses = ",".join(f"'{status.value}'" for status in InvoiceStatus)
    created = "now() - s.i * interval '1 second'"
    overrides = {
        "id": "s.uid",
        "status": f"(ARRAY[{statuses}])[1 + mod(s.i, {len(InvoiceStatus)})]",
        "created_at": created,
        "updated_at": created,
    }
    return Invoice(company=company, invoice_currency="usd", total=Decimal("4.50")), overrides


def _event_template(company: Company) -> tuple[Model, dict[str, str]]:
    """An invoice's "created" event, its body naming its own object id. Delivered, failed or skipped, never
    pending: nothing generated is due for delivery."""
    from core import jsonutil
    from invoices.events import invoice_body
    from webhooks.models import WebhookEvent

    created = "now() - s.i * interval '1 second'"
    overrides = {
        "id": "gen_random_uuid()",
        "object_id": "s.uid::text",
        "body": f"replace({{value}}, '{_ID_MARK}', s.uid::text)",
        "status": "(ARRAY['delivered','failed','skipped'])[1 + mod(s.i, 3)]",
        "attempt_count": "1 + mod(s.i, 3)",
        "delivered_at": f"CASE WHEN mod(s.i, 3) = 0 THEN {created} END",
        "created_at": created,
        "updated_at": created,
    }
    event = WebhookEvent(
        company=company,
        family="invoice",
        object_id=_ID_MARK,
        event_status="created",
        body=jsonutil.dumps(invoice_body(invoice_id=_ID_MARK, status="created")),
        status="delivered",
    )
    return event, overrides


def _fill(template: Model, overrides: dict[str, str], missing: int) -> None:
    from django.db import connection

    columns, values = _template_values(template)
    sql = insert_select_sql(template._meta.db_table, columns, overrides)
    params = template_params([c for c, _ in columns], values, overrides)
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, missing])


def _ensure_rows(merchant: Merchant, rows: int) -> float:
    """Top the merchant up to `rows` invoices and `rows` webhook events; returns the seconds it took (0.0
    when it had them already)."""
    from django.db import connection, transaction

    from invoices.models import Invoice
    from webhooks.models import WebhookEvent

    started = time.perf_counter()
    wrote = False
    for model, template in ((Invoice, _invoice_template), (WebhookEvent, _event_template)):
        missing = rows - model.objects.filter(company=merchant.company).count()
        if missing <= 0:
            continue
        what = f"{missing:,} {model._meta.verbose_name_plural} for the {merchant.label} merchant"
        print(f"  scale: writing {what}", flush=True)
        step = time.perf_counter()
        with transaction.atomic():
            _fill(*template(merchant.company), missing)
        print(f"  scale: wrote {what} in {time.perf_counter() - step:.1f} s", flush=True)
        wrote = True
    if not wrote:
        return 0.0
    with connection.cursor() as cursor:  # fresh statistics, as autovacuum would keep them in production
        cursor.execute(f"ANALYZE {Invoice._meta.db_table}, {WebhookEvent._meta.db_table}")
    return time.perf_counter() - started


# --- what is measured ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Targets:
    """A merchant's request targets: positions of its deep pages, an offset as deep, an invoice to read."""

    invoice_after: str  # "" when the merchant has too few rows for a deep page (then: the newest)
    event_after: str
    invoice_depth: int
    invoice_id: str


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    audience: str  # "api" (Bearer token), "web" (logged-in dashboard session), "public" (nobody)


@dataclass(frozen=True)
class Measure:
    what: str
    call: Callable[[Targets], Call]
    slow: bool = False  # reads ~a million rows a request: SLOW_REQUESTS of it


API_INVOICES = "/api/invoices/v1/regular"
# Once 4.5 s a request at a million events (attempts counted by a JOIN with GROUP BY over all of them): kept
# as its own row so a regression of that shape shows.
NEWEST_EVENTS = "API webhook events, newest page"
MEASURES = [
    Measure("API invoice create", lambda t: Call("POST", API_INVOICES, "api")),
    Measure("public invoice GET", lambda t: Call("GET", f"{API_INVOICES}/{t.invoice_id}", "public")),
    Measure("API invoices, newest page", lambda t: Call("GET", f"{API_INVOICES}?limit={PAGE}&after=", "api")),
    Measure(
        "API invoices, deep page (after)",
        lambda t: Call("GET", f"{API_INVOICES}?limit={PAGE}&after={t.invoice_after}", "api"),
    ),
    Measure(
        "API webhook events, deep page (after)",
        lambda t: Call("GET", f"/api/webhooks/events?limit={PAGE}&after={t.event_after}", "api"),
    ),
    Measure(NEWEST_EVENTS, lambda t: Call("GET", f"/api/webhooks/events?limit={PAGE}&after=", "api")),
    Measure("dashboard invoices, newest page", lambda t: Call("GET", "/dashboard/invoices/", "web")),
    Measure(
        "dashboard invoices, deep page (after)",
        lambda t: Call("GET", f"/dashboard/invoices/?after={t.invoice_after}", "web"),
    ),
    Measure(
        "API invoices, deep page (offset: grows, use after)",
        lambda t: Call("GET", f"{API_INVOICES}?limit={PAGE}&offset={t.invoice_depth}", "api"),
        slow=True,
    ),
    Measure(
        "API invoices, first page + count (count: grows)",
        lambda t: Call("GET", f"{API_INVOICES}?limit={PAGE}", "api"),
        slow=True,
    ),
]


def _newest_first(model: type[Model], company: Company) -> QuerySet[Any]:
    return model._default_manager.filter(company=company).order_by("-created_at", "-pk")


def _position(model: type[Model], company: Company) -> tuple[str, int]:
    """The position (keyset text) starting the merchant's deep page of `model`, and its depth."""
    from core.keyset import position_text

    rows = _newest_first(model, company)
    depth = page_depth(rows.count(), DEPTH, PAGE)
    return ("", 0) if depth is None else (position_text(rows[depth]), depth)


def _targets(merchant: Merchant) -> Targets:
    from decimal import Decimal

    from invoices.models import Invoice
    from invoices.services import ItemInput, invoice_create
    from webhooks.models import WebhookEvent

    invoice_after, depth = _position(Invoice, merchant.company)
    event_after, event_depth = _position(WebhookEvent, merchant.company)
    print(
        f"  scale: {merchant.label}: deep pages start {depth:,} invoices / {event_depth:,} events deep",
        flush=True,
    )
    items = [ItemInput(name="Coffee", price=Decimal("4.50"))]
    invoice = invoice_create(company=merchant.company, invoice_currency="usd", items=items)
    return Targets(invoice_after, event_after, depth, str(invoice.pk))


def _clients(merchant: Merchant) -> dict[str, Client]:
    """A client per audience. The host is one ALLOWED_HOSTS has; failures come back as answers (a 500 is a
    failed row, not a crashed bench)."""
    from django.test import Client

    clients = {
        audience: Client(raise_request_exception=False, HTTP_HOST="127.0.0.1")
        for audience in ("api", "web", "public")
    }
    clients["api"].defaults["HTTP_AUTHORIZATION"] = f"Bearer {merchant.token}"
    clients["web"].force_login(merchant.company.owner)
    return clients


def _send(client: Client, call: Call) -> HttpResponseBase:
    if call.method == "POST":
        return client.post(call.path, data=INVOICE_BODY, content_type="application/json")
    return client.get(call.path)


def _problem(call: Call, response: HttpResponseBase) -> str | None:
    """None for the answer expected (2xx from the API; 200 from a page, not a redirect to the login)."""
    ok = response.status_code == 200 if call.audience == "web" else 200 <= response.status_code < 300
    if ok:
        return None
    answer = b"".join(response)[:300].decode(errors="replace")
    hint = " (rate limited: the bench settings should lift this limit)" if response.status_code == 429 else ""
    return f"{call.method} {call.path[:120]} answered {response.status_code}{hint}: {answer}"


def _measure(name: str, client: Client, call: Call, *, slow: bool, baseline: str) -> Result:
    """The median of the measured requests after the warm-ups; the first bad answer ends it as a failure."""
    warmups, requests = (SLOW_WARMUPS, SLOW_REQUESTS) if slow else (WARMUPS, REQUESTS)
    timings = []
    for index in range(warmups + requests):
        started = time.perf_counter()
        response = _send(client, call)
        elapsed = time.perf_counter() - started
        problem = _problem(call, response)
        if problem:
            return Result(name, None, baseline=baseline, failures=[problem])
        if index >= warmups:
            timings.append(elapsed)
    median = median_ms(timings)
    return Result(name, 1000 / median, p50_ms=median, baseline=baseline)


def _measure_pair(
    measure: Measure,
    merchants: Sequence[Merchant],
    targets: dict[str, Targets],
    clients: dict[str, dict[str, Client]],
) -> list[Result]:
    """The small merchant's row (its own baseline, 1.00) and the big one's, divided by it."""
    small_name = f"{measure.what}, {SMALL}"
    rows = []
    for merchant in merchants:
        call = measure.call(targets[merchant.label])
        client = clients[merchant.label][call.audience]
        rows.append(
            _measure(
                f"{measure.what}, {merchant.label}", client, call, slow=measure.slow, baseline=small_name
            )
        )
    return rows


# --- the plans ----------------------------------------------------------------------------------------------


def _plan_querysets(merchant: Merchant, targets: Targets) -> dict[str, QuerySet[Any]]:
    """The list queries as the views build them, keyed by the measured row they explain: the three deep
    keyset pages, then the newest page of webhook events (whose attempt count once grouped every event)."""
    from core.keyset import older_than, parse_position
    from invoices.models import Invoice
    from invoices.selectors import invoice_list_for_company, invoice_search_for_company
    from payments.dashboard.views.common import PAGE_SIZE
    from webhooks.models import WebhookEvent
    from webhooks.selectors import webhook_list_events

    invoice_at = parse_position(targets.invoice_after, Invoice)
    event_at = parse_position(targets.event_after, WebhookEvent)
    assert invoice_at is not None and event_at is not None, "the 1M merchant has a deep page"
    invoices = invoice_list_for_company(company=merchant.company)
    events = webhook_list_events(company=merchant.company)
    dashboard = invoice_search_for_company(company=merchant.company)
    return {
        "API invoices, deep page (after)": older_than(invoices, invoice_at)[: PAGE + 1],
        "API webhook events, deep page (after)": older_than(events, event_at)[: PAGE + 1],
        "dashboard invoices, deep page (after)": older_than(dashboard, invoice_at)[: PAGE_SIZE + 1],
        NEWEST_EVENTS: events[: PAGE + 1],
    }


def _explain_one(queryset: QuerySet[Any]) -> tuple[str, str]:
    from django.db import connection

    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", params)
        return sql, "\n".join(row[0] for row in cursor.fetchall())


def _explain(merchant: Merchant, targets: Targets) -> dict[str, list[str]]:
    """EXPLAIN (ANALYZE, BUFFERS) of each list query into one file; each list page's plan problems
    (a big table scanned without its index) by row name. A plan reading far more rows than a page is
    printed as a warning: the numbers are right, the query shape is what grows."""
    from django.conf import settings

    from invoices.models import Invoice
    from webhooks.models import WebhookEvent

    big_tables = [Invoice._meta.db_table, WebhookEvent._meta.db_table]
    sections, problems = [], {}
    for what, queryset in _plan_querysets(merchant, targets).items():
        sql, plan = _explain_one(queryset)
        read, found = rows_read(plan), plan_problems(plan, big_tables)
        note = f"reads {read:,} rows for one page" + (f"; {', '.join(found)}" if found else "")
        sections.append(f"== {what}, {BIG} ({note}) ==\n\n{sql}\n\n{plan}\n")
        problems[f"{what}, {BIG}"] = [f"plan: {problem}" for problem in found]
        warning = "  WARNING: grows with the table" if read > 10 * (PAGE + 1) or found else ""
        print(f"  scale: plan of {what}: {plan_gist(plan)}; {note}{warning}", flush=True)
    folder = Path(settings.VAR_DIR) / "bench"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"explain-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.txt"
    path.write_text("\n".join(sections))
    print(f"  scale: plans written to {path}", flush=True)
    return problems


# --- the kind -----------------------------------------------------------------------------------------------


@benchmark
def scale(ctx: BenchContext) -> list[Result]:
    """Each measure for a merchant with 100-odd rows and for one with 1,000,000 invoices and events."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return [Result("scale (PostgreSQL only)", None)]
    small, big = _merchant(*SMALL_MERCHANT), _merchant(*SCALE_MERCHANT)
    _ensure_rows(small, SMALL_ROWS)
    seconds = _ensure_rows(big, SCALE_ROWS)
    print(
        f"  scale: generation took {seconds:.1f} s" if seconds else "  scale: reusing the 1M rows", flush=True
    )
    merchants = (small, big)
    targets = {m.label: _targets(m) for m in merchants}
    clients = {m.label: _clients(m) for m in merchants}
    results = []
    for measure in MEASURES:
        results += _measure_pair(measure, merchants, targets, clients)
        print(f"  scale: measured {measure.what}", flush=True)
    problems = _explain(big, targets[BIG])
    for result in results:
        result.failures += problems.get(result.name, [])
    return with_ratios(results, baseline=results[0].baseline)

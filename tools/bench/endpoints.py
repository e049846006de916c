"""The HTTP endpoints `make bench` measures. A new endpoint is one more entry in `ENDPOINTS`.

Every entry is sent with the bench merchant's `Authorization: Bearer` header unless `auth=False`, and with
`Content-Type: application/json` when it has a body. Each entry names the baseline entry its ratios divide
by: writes by the one-row insert, reads by the one-row read (both bare Django + DRF, tools/bench/views.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

BASELINE = "baseline insert"
BASELINE_READ = "baseline read"
BENCH_BTC_ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"
PUBLIC_CLIENTS = 4096


@dataclass(frozen=True)
class HttpEndpoint:
    name: str
    method: str
    path: str
    body: Any = None  # JSON-encoded when not None
    headers: Mapping[str, str] = field(default_factory=dict)
    auth: bool = True
    baseline: str = BASELINE  # the entry its ratios divide by
    # Sent as from this many client addresses in turn (X-Forwarded-For, one proxy in front as in production),
    # so a per-client budget is counted as production counts it: a new address, a new budget.
    clients: int = 0


ENDPOINTS: list[HttpEndpoint] = [
    # Auth + one INSERT (or one SELECT) + tiny JSON through DRF: the floor every API endpoint stands on.
    HttpEndpoint(BASELINE, "POST", "/bench/baseline"),
    # `{baseline_row}`: a row of the bench merchant's the harness inserts before the runs.
    HttpEndpoint(BASELINE_READ, "GET", "/bench/baseline/{baseline_row}", baseline=BASELINE_READ),
    # A loopback literal: bench settings allow private hosts, so the SSRF guard makes no DNS query per
    # request (a hostname would put the machine's resolver, and traffic off loopback, into the numbers).
    HttpEndpoint(
        "PUT webhook-url",
        "PUT",
        "/api/company/settings/webhook-url",
        body={"webHookUrl": "http://127.0.0.1:9/hook"},
    ),
    HttpEndpoint(
        "POST invoice",
        "POST",
        "/api/invoices/v1/regular",
        body={
            "invoiceCurrency": "usd",
            "items": [{"name": "Coffee", "price": 4.5}, {"name": "Cake", "price": 3}],
        },
    ),
    # `{invoice_id}`: a filled invoice the harness creates before the runs (benchmarks.py). Clients
    # paying on the hosted page: each address has production's budget (INVOICE_PUBLIC_RATE, 120/min), a
    # lease of one request, so every read counts in Redis as it does in production. 4,096 addresses keep
    # each of them far below its budget at the rates wrk reaches.
    HttpEndpoint(
        "GET invoice (public)",
        "GET",
        "/api/invoices/v1/regular/{invoice_id}",
        auth=False,
        baseline=BASELINE_READ,
        clients=PUBLIC_CLIENTS,
    ),
    # One item per call, each a new withdrawal (no Idempotency-Key); the harness funds the merchant first.
    HttpEndpoint(
        "POST withdraw (1 item)",
        "POST",
        "/api/transactions/withdraw",
        body={
            "items": [
                {"asset": "btc", "amount": "0.0005", "to": "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"}
            ]
        },
    ),
]

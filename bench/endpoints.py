"""The HTTP endpoints `make bench` measures. A new endpoint is one more entry in `ENDPOINTS`.

Every entry is sent with the bench merchant's `Authorization: Bearer` header unless `auth=False`, and with
`Content-Type: application/json` when it has a body. The ratio column divides by the `baseline` entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

BASELINE = "baseline"


@dataclass(frozen=True)
class HttpEndpoint:
    name: str
    method: str
    path: str
    body: Any = None  # JSON-encoded when not None
    headers: Mapping[str, str] = field(default_factory=dict)
    auth: bool = True


ENDPOINTS: list[HttpEndpoint] = [
    # Auth + one INSERT + tiny JSON, without DRF: the floor every API endpoint stands on (bench/views.py).
    HttpEndpoint(BASELINE, "POST", "/bench/baseline"),
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
    # `{invoice_id}`: a filled invoice the harness creates before the runs (bench/benchmarks.py).
    HttpEndpoint("GET invoice (public)", "GET", "/api/invoices/v1/regular/{invoice_id}", auth=False),
]

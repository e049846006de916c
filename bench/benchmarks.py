"""The registered benchmark kinds. A new kind is one more `@benchmark` function here.

A kind gets the running service and a merchant (`BenchContext`) and returns table rows whose `ratio` is
against a baseline it measured itself in the same run, e.g. a service call in a loop over a bare
`BaselineRow.objects.create` loop (Django is set up in this process with the bench settings).
"""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from urllib.parse import urlsplit

from bench import wrk
from bench.core import BenchContext, Result, benchmark, with_ratios
from bench.endpoints import BASELINE, ENDPOINTS, HttpEndpoint


@benchmark
def http_endpoints(ctx: BenchContext) -> list[Result]:
    """Each entry of `ENDPOINTS` under wrk: a warm-up run, then the measured one."""
    wrk_path = wrk.ensure_wrk()
    results = []
    for index, endpoint in enumerate(ENDPOINTS):
        body = None if endpoint.body is None else json.dumps(endpoint.body)
        headers = _headers(endpoint, ctx, has_body=body is not None)
        # One request by hand first: a wrong token or body then fails with the answer shown, not a count.
        problem = _preflight(ctx.base_url, endpoint, body, headers)
        if problem:
            results.append(Result(endpoint.name, None, failures=[problem]))
            continue
        script = wrk.write_script(
            Path(ctx.workdir) / f"endpoint-{index}.lua", method=endpoint.method, body=body, headers=headers
        )
        url = ctx.base_url + endpoint.path
        try:
            # Warm-up fills connection pools, caches and imports in every worker; its numbers are dropped.
            wrk.run(wrk_path, url, script, ctx.wrk, duration_s=ctx.wrk.warmup_s)
            report = wrk.run(wrk_path, url, script, ctx.wrk, duration_s=ctx.wrk.duration_s)
        except wrk.WrkError as exc:
            results.append(Result(endpoint.name, None, failures=[str(exc)]))
            continue
        results.append(
            Result(
                endpoint.name,
                report.requests_per_s,
                p50_ms=report.p50_ms,
                p99_ms=report.p99_ms,
                failures=report.failures(),
            )
        )
    return with_ratios(results, baseline=BASELINE)


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

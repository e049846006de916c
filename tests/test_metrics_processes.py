"""Multi-process metrics: two gunicorn workers (one replaced midway) and a Celery worker count in their own
files under PROMETHEUS_MULTIPROC_DIR, and one scrape adds them up; the database gauges appear once."""

from __future__ import annotations

import json
import os
import signal
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from payments.services import company_set_webhook_url
from tests.factories import MerchantFactory
from tests.workers import children, kill_tree, start_web, start_worker, wait_for
from tools.bench.server import free_port, stop_process_group
from webhooks.receiver import Reply, WebhookReceiver

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]
TOKEN = "metrics-token-for-the-process-test-0123456789"
BATCH = 5


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except OSError:
        return 0, b""


def _create_invoice(base: str, token: str) -> None:
    body = json.dumps({"invoiceCurrency": "usd", "items": [{"name": "Tea", "price": "10"}]}).encode()
    request = urllib.request.Request(
        f"{base}/api/invoices/v1/regular",
        data=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 201


def _scrape(base: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    status, body = _get(f"{base}/metrics", {"Authorization": f"Bearer {TOKEN}"})
    assert status == 200, body[-2000:]
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples
    }


def _total(samples: dict, name: str, **labels: str) -> float:  # type: ignore[type-arg]
    return sum(
        value for (sample, found), value in samples.items() if sample == name and set(labels.items()) <= found
    )


def _counting_pids(directory: Path) -> set[int]:
    return {int(path.stem.rpartition("_")[2]) for path in directory.glob("counter_*.db")}


def test_counts_of_every_process_add_up_in_one_scrape(tmp_path, settings) -> None:  # type: ignore[no-untyped-def]
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True  # the receiver listens on 127.0.0.1
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    created = MerchantFactory(name="Counted", email="counted@shop.test")
    shared = {"PROMETHEUS_MULTIPROC_DIR": str(metrics_dir), "METRICS_TOKEN": TOKEN}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with WebhookReceiver(secret=created.signing_secret, default=Reply(status=500)) as receiver:
        company_set_webhook_url(company_id=created.company.pk, url=receiver.url)
        worker = start_worker(tmp_path, "metrics-worker", concurrency=1, queues="webhooks", **shared)
        log = open(tmp_path / "gunicorn.log", "wb")  # noqa: SIM115 - closed below
        web = start_web(tmp_path, port, log, workers=2, **shared)
        try:
            assert wait_for(lambda: _get(f"{base}/healthz")[0] == 200, 60), (
                tmp_path / "gunicorn.log"
            ).read_text()
            for _ in range(BATCH):
                _create_invoice(base, created.public_token)
            # One worker that counted is replaced (a restart, max-requests, a timeout): its counts must stay.
            workers = children(web.pid)
            replaced = sorted(workers & _counting_pids(metrics_dir))[0]
            os.kill(replaced, signal.SIGTERM)
            assert wait_for(lambda: len(children(web.pid) - {replaced}) == 2, 60)
            for _ in range(BATCH):
                _create_invoice(base, created.public_token)
            # Each invoice's webhook is attempted by the Celery worker (the receiver answers 500).
            delivered = wait_for(lambda: len(receiver.received) >= 2 * BATCH, 90)
            attempts = wait_for(
                lambda: _total(_scrape(base), "kassa_webhook_attempts_total") >= 2 * BATCH, 30
            )
            samples = _scrape(base)
            web_pids = children(web.pid) | workers
            counted_by = _counting_pids(metrics_dir)
        finally:
            stop_process_group(web)
            log.close()
            kill_tree(worker, signal.SIGTERM)

    assert delivered and attempts, (tmp_path / "metrics-worker").read_text(errors="replace")[-3000:]
    assert _total(samples, "kassa_invoices_created_total") == 2 * BATCH
    route = "api/invoices/v1/regular"
    assert _total(samples, "kassa_http_requests_total", route=route, method="POST", status="2xx") == 2 * BATCH
    assert _total(samples, "kassa_http_request_duration_seconds_count", route=route) == 2 * BATCH
    assert _total(samples, "kassa_webhook_attempts_total", outcome="retry") >= 2 * BATCH
    # The gauge is read once from the database by the scraping process, not once per process and summed.
    assert _total(samples, "kassa_invoices", status="created") == 2 * BATCH
    assert replaced in counted_by
    assert len(counted_by & web_pids) >= 2, "the requests were not spread over two gunicorn processes"
    assert counted_by - web_pids, "no Celery process counted"

"""Structured logs and the request id (core/logs.py, core/request_id.py, docs/operations.md#logs).

In-process tests capture the JSON lines production writes with the production formatter and filters on a
handler of their own; the subprocess tests run the real settings modules and read the process's stderr.
"""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.test import Client, RequestFactory

from config.celery import carry_request_id, drop_request_id, take_request_id
from config.views import server_error, service_unavailable
from core import request_id
from core.logs import JsonFormatter, RedactSecretsFilter, RequestContextFilter, logging_config, redact
from tests.factories import PASSWORD
from tests.test_production_settings import production_env

ROOT = Path(__file__).resolve().parent.parent
PRODUCTION = "config.settings.production"


class JsonLines:
    def __init__(self, stream: io.StringIO) -> None:
        self.stream = stream

    def all(self) -> list[dict]:
        return [json.loads(line) for line in self.stream.getvalue().splitlines() if line.strip()]

    def access(self) -> list[dict]:
        return [line for line in self.all() if line["logger"] == "kassa.access"]

    def text(self) -> str:
        return self.stream.getvalue()


@pytest.fixture
def json_lines() -> Iterator[JsonLines]:
    """What production's handler writes: its JSON formatter behind its two filters, on the root logger."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestContextFilter())
    handler.addFilter(RedactSecretsFilter())
    root = logging.getLogger()
    saved_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield JsonLines(stream)
    root.removeHandler(handler)
    root.setLevel(saved_level)


# --- The request id --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_api_request_logs_one_json_access_line_with_the_id_of_its_response(api, merchant, json_lines):
    response = api.get("/api/company/balances?secret=kassa_pk_leak")

    assert response.status_code == 200
    (line,) = json_lines.access()
    assert line["request_id"] == response["X-Request-ID"]
    assert len(response["X-Request-ID"]) == 32  # made here: uuid4 hex
    assert line["merchant_id"] == str(merchant.company.pk)
    assert line["method"] == "GET"
    assert line["route"] == "/api/company/balances"
    assert line["status"] == 200
    assert isinstance(line["duration_ms"], float)
    assert line["level"] == "INFO"
    assert line["time"].endswith("Z") and "T" in line["time"]
    assert "secret" not in json_lines.text()  # the query string is never logged


@pytest.mark.django_db
def test_a_log_line_inside_the_request_carries_its_id_and_merchant(api, merchant, json_lines, monkeypatch):
    from payments.api import balances

    original = balances.CompanyBalanceListApi.get

    def get(self, request):  # type: ignore[no-untyped-def]
        logging.getLogger("kassa.test").info("balances read", extra={"invoice_id": "inv-1"})
        return original(self, request)

    monkeypatch.setattr(balances.CompanyBalanceListApi, "get", get)

    response = api.get("/api/company/balances")

    (line,) = [line for line in json_lines.all() if line["logger"] == "kassa.test"]
    assert line["request_id"] == response["X-Request-ID"]
    assert line["merchant_id"] == str(merchant.company.pk)
    assert line["invoice_id"] == "inv-1"


@pytest.mark.django_db
def test_the_lines_of_a_request_name_the_invoice_it_created_or_read(api, merchant, json_lines, monkeypatch):
    from invoices import services

    real = services.webhook_enqueue

    def enqueue(events):  # type: ignore[no-untyped-def]
        logging.getLogger("kassa.test").info("enqueued")  # a line logged after the invoice was named
        return real(events)

    monkeypatch.setattr(services, "webhook_enqueue", enqueue)
    body = {"invoiceCurrency": "usd", "items": [{"name": "Tea", "price": "3.50"}]}
    created = api.post("/api/invoices/v1/regular", body, format="json")
    read = api.get(f"/api/invoices/v1/regular/{created.json()['id']}")

    invoice_id = created.json()["id"]
    create_line, read_line = json_lines.access()
    (inner,) = [line for line in json_lines.all() if line["logger"] == "kassa.test"]
    assert (created.status_code, read.status_code) == (201, 200)
    assert create_line["invoice_id"] == read_line["invoice_id"] == inner["invoice_id"] == invoice_id
    assert inner["request_id"] == created["X-Request-ID"]


@pytest.mark.django_db
def test_the_access_line_of_a_withdrawal_names_it(api, merchant, json_lines):
    from tests.chain import fund
    from withdrawals.tests.conftest import item, withdraw

    fund(merchant.company, "btc", "1")
    response = withdraw(api, item())
    (result,) = response.json()
    uid = result["uid"]
    api.get(f"/api/transactions/withdrawals/{uid}")

    sent, read = json_lines.access()
    assert sent["withdrawal_uid"] == read["withdrawal_uid"] == uid


@pytest.mark.django_db
def test_a_path_that_is_not_a_sane_token_names_nothing(api, merchant, json_lines):
    response = api.get("/api/transactions/withdrawals/evil%0Aline%20injected")

    (line,) = json_lines.access()
    assert response.status_code == 404
    assert "withdrawal_uid" not in line
    assert "injected" not in json_lines.text()


@pytest.mark.django_db
def test_a_webhook_delivery_task_names_its_event_and_merchant(merchant, receiver, json_lines):
    from tests.factories import InvoiceFactory
    from webhooks.delivery import webhook_deliver
    from webhooks.models import WebhookEvent

    InvoiceFactory(company=merchant.company)
    (event,) = WebhookEvent.objects.all()
    task = SimpleNamespace(request=SimpleNamespace(id="deliver-1", is_eager=False, headers=None))

    take_request_id(sender=task, task_id="deliver-1")
    webhook_deliver(event_id=event.pk)
    logging.getLogger("kassa.test").info("delivered")
    drop_request_id(task_id="deliver-1")
    logging.getLogger("kassa.test").info("after the task")

    during, after = [line for line in json_lines.all() if line["logger"] == "kassa.test"]
    assert during["webhook_event_id"] == str(event.pk)
    assert during["merchant_id"] == str(merchant.company.pk)
    assert during["request_id"] == "deliver-1"
    assert "webhook_event_id" not in after and "merchant_id" not in after


@pytest.mark.django_db
def test_the_access_line_names_the_url_pattern_never_a_reset_token(client, json_lines):
    response = client.get("/dashboard/password-reset/MQ/secret-reset-token-123/?next=kassa")

    (line,) = json_lines.access()
    assert line["route"] == "/dashboard/password-reset/<uidb64>/<token>/"
    assert line["status"] == response.status_code
    assert "secret-reset-token-123" not in json_lines.text()


@pytest.mark.django_db
def test_a_dashboard_users_lines_carry_the_merchant(merchant, json_lines):
    client = Client()
    assert client.login(username="owner@acme.test", password=PASSWORD)

    client.get("/dashboard/")

    line = json_lines.access()[-1]
    assert line["route"] == "/dashboard/"
    assert line["merchant_id"] == str(merchant.company.pk)


@pytest.mark.django_db
def test_an_anonymous_request_has_no_merchant(client, json_lines):
    client.get("/healthz")

    (line,) = json_lines.access()
    assert "merchant_id" not in line
    assert line["route"] == "/healthz"


@pytest.mark.django_db
def test_an_incoming_sane_request_id_is_kept(client, json_lines):
    response = client.get("/healthz", HTTP_X_REQUEST_ID="lb-7f3a.2_x-1")

    assert response["X-Request-ID"] == "lb-7f3a.2_x-1"
    assert json_lines.access()[0]["request_id"] == "lb-7f3a.2_x-1"


@pytest.mark.parametrize(
    "hostile",
    [
        "a" * 65,
        "abc def",
        'x", "level": "CRITICAL',
        "line\nbreak",
        "ключ",
        "../../etc/passwd",
        "<script>",
        "",
    ],
)
@pytest.mark.django_db
def test_a_hostile_request_id_is_replaced(client, json_lines, hostile):
    response = client.get("/healthz", HTTP_X_REQUEST_ID=hostile)

    made = response["X-Request-ID"]
    assert made != hostile
    assert len(made) == 32 and int(made, 16) >= 0
    (line,) = json_lines.access()
    assert line["request_id"] == made
    assert hostile not in json_lines.text() or hostile == ""


# --- problem+json ----------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("get", "/api/no-such-endpoint", None, 404),  # the API's catch-all
        ("get", "/api/company/balances", None, 401),  # DRF, through problem_exception_handler
        ("post", "/api/invoices/v1/regular", {"currency": "nope"}, 400),
    ],
)
def test_problem_json_carries_the_request_id_beside_the_documented_fields(
    anon, api, method, path, body, status
):
    caller = api if status != 401 else anon

    response = getattr(caller, method)(path, body, format="json", HTTP_X_REQUEST_ID="support-42")

    assert response.status_code == status
    assert response["Content-Type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["requestId"] == "support-42" == response["X-Request-ID"]
    assert {"type", "title", "status", "code", "detail"} <= set(problem)


@pytest.mark.parametrize("handler", [server_error, service_unavailable])
def test_the_500_and_503_handlers_carry_the_request_id(handler):
    token = request_id.set_request_id("rid-500")
    try:
        request = RequestFactory().get("/api/anything")
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            response = handler(request)
    finally:
        request_id.reset_request_id(token)

    assert response.status_code in (500, 503)
    assert json.loads(response.content)["requestId"] == "rid-500"


# --- Secrets are never logged ----------------------------------------------------------------------------


SECRETS = [
    "kassa_pk_Zx81kq0aLw-secret",
    "kassa_tk_Qx7b0123456789abcdef",
    "whsec_9f8e7d6c5b4a",
    "Bearer abc.def-ghi",
    "http://rpcuser:rpcpass@node.internal:8332",
]


def test_the_redaction_filter_removes_secrets_from_message_args_extra_and_traceback(json_lines):
    logger = logging.getLogger("kassa.test")

    logger.warning("token %s in message " + SECRETS[0], SECRETS[1], extra={"detail": SECRETS[2]})
    logger.info("headers %r", {"Authorization": SECRETS[3]})
    try:
        raise ValueError(f"cannot reach {SECRETS[4]}")
    except ValueError:
        logger.exception("node call failed")

    text = json_lines.text()
    for leaked in ("Zx81kq0aLw", "Qx7b0123456789abcdef", "9f8e7d6c5b4a", "abc.def-ghi", "rpcpass"):
        assert leaked not in text
    assert text.count("[redacted]") >= 5
    lines = json_lines.all()
    assert lines[0]["message"] == "token kassa_tk_[redacted] in message kassa_pk_[redacted]"
    assert lines[0]["detail"] == "whsec_[redacted]"
    assert "ValueError: cannot reach http://[redacted]@node.internal:8332" in lines[2]["exc_info"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("kassa_pk_abc", "kassa_pk_[redacted]"),
        ("authorization: bearer xyz", "authorization: bearer [redacted]"),
        ("redis://:pw@redis:6379/0", "redis://[redacted]@redis:6379/0"),
        ("postgres://kassa:pw@db/kassa", "postgres://[redacted]@db/kassa"),
        ("invoice 5 paid, 0.001 btc", "invoice 5 paid, 0.001 btc"),
        ("https://pay.example.com/abc", "https://pay.example.com/abc"),
    ],
)
def test_redact(text, expected):
    assert redact(text) == expected


@pytest.mark.django_db
def test_a_request_with_a_token_logs_no_token(merchant, json_lines):
    client = Client()

    client.get("/api/company/balances", HTTP_AUTHORIZATION="Bearer kassa_pk_wrongwrongwrong")
    client.get("/api/company/balances", HTTP_AUTHORIZATION=f"Bearer {merchant.public_token}")

    assert json_lines.access()
    assert "wrongwrongwrong" not in json_lines.text()
    assert merchant.public_token not in json_lines.text()


# --- Settings --------------------------------------------------------------------------------------------


def test_a_log_format_other_than_json_or_text_is_refused():
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match="LOG_FORMAT is 'json' or 'text'"):
        logging_config("xml", "INFO")
    with pytest.raises(ImproperlyConfigured, match="LOG_LEVEL"):
        logging_config("json", "LOUD")


def test_tests_and_development_log_text():
    from django.conf import settings

    assert settings.LOG_FORMAT == "text"
    assert settings.LOGGING["handlers"]["console"]["formatter"] == "text"


# --- Celery ----------------------------------------------------------------------------------------------


def test_a_task_published_during_a_request_carries_its_id_and_logs_with_it(json_lines):
    headers: dict = {}
    token = request_id.set_request_id("req-9")
    try:
        carry_request_id(headers=headers)
    finally:
        request_id.reset_request_id(token)
    task = SimpleNamespace(request=SimpleNamespace(id="task-1", is_eager=False, **headers))

    take_request_id(sender=task, task_id="task-1")
    logging.getLogger("kassa.test").info("in the task")
    drop_request_id(task_id="task-1")
    logging.getLogger("kassa.test").info("after the task")

    assert headers == {"kassa_request_id": "req-9"}
    during, after = json_lines.all()
    assert during["request_id"] == "req-9"
    assert after["request_id"] is None


def test_a_task_nobody_requested_logs_with_its_own_id(json_lines):
    task = SimpleNamespace(request=SimpleNamespace(id="beat-task-7", is_eager=False, headers=None))

    take_request_id(sender=task, task_id="beat-task-7")
    logging.getLogger("kassa.test").info("swept")
    drop_request_id(task_id="beat-task-7")

    assert json_lines.all()[0]["request_id"] == "beat-task-7"


def test_a_task_run_eagerly_in_a_request_keeps_the_requests_id(json_lines):
    task = SimpleNamespace(request=SimpleNamespace(id="eager-1", is_eager=True))
    token = request_id.set_request_id("req-eager")
    try:
        take_request_id(sender=task, task_id="eager-1")
        logging.getLogger("kassa.test").info("eager")
        drop_request_id(task_id="eager-1")
        assert request_id.current_request_id() == "req-eager"
    finally:
        request_id.reset_request_id(token)

    assert json_lines.all()[0]["request_id"] == "req-eager"


# --- The real processes ----------------------------------------------------------------------------------


def _run(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _json_lines(stderr: str) -> list[dict]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


def test_production_writes_json_lines_with_the_id_the_response_showed(tmp_path):
    script = (
        "import django; django.setup()\n"
        "from django.test import Client\n"
        "client = Client(HTTP_HOST='pay.example.com')\n"
        "ready = client.get('/readyz', HTTP_X_REQUEST_ID='probe-1')\n"
        "print(ready.status_code, ready['X-Request-ID'], client.get('/dashboard/login/').status_code)\n"
    )

    result = _run(script, production_env(tmp_path, DJANGO_SETTINGS_MODULE=PRODUCTION))

    assert result.returncode == 0, result.stderr
    status, header, dashboard = result.stdout.split()
    assert status == "200" and header == "probe-1"  # /readyz: plain http, no redirect
    assert dashboard == "301"  # everything else is redirected to https
    lines = _json_lines(result.stderr)
    assert all(not line.strip() or line.startswith("{") for line in result.stderr.splitlines()), result.stderr
    ready = next(line for line in lines if line.get("route") == "/readyz")
    assert ready["request_id"] == "probe-1"
    assert ready["status"] == 200
    assert {"time", "level", "logger", "message"} <= set(ready)


def test_production_text_format_on_request(tmp_path):
    script = "import django, logging; django.setup(); logging.getLogger('kassa.test').warning('plain')"

    result = _run(script, production_env(tmp_path, LOG_FORMAT="text", DJANGO_SETTINGS_MODULE=PRODUCTION))

    assert result.returncode == 0, result.stderr
    assert "WARNING kassa.test [-] plain" in result.stderr


def test_celery_workers_log_json_through_djangos_logging(tmp_path):
    # What worker and beat do at start: load the app and its tasks, then set up logging (the signal).
    script = (
        "from config.celery import app; app.loader.import_default_modules()\n"
        "app.log.setup(loglevel='INFO')\n"
        "import logging; logging.getLogger('celery.worker').info('worker up whsec_abc')\n"
        "print(app.conf.worker_hijack_root_logger)\n"
    )

    result = _run(script, production_env(tmp_path))

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False"]
    (line,) = [line for line in _json_lines(result.stderr) if line["logger"] == "celery.worker"]
    assert line["message"] == "worker up whsec_[redacted]"
    assert line["level"] == "INFO"


def test_uuid_and_decimal_extras_are_written_as_text(json_lines):
    from decimal import Decimal

    invoice_id = uuid.uuid4()

    logging.getLogger("kassa.test").info("paid", extra={"invoice_id": invoice_id, "amount": Decimal("0.1")})

    line = json_lines.all()[0]
    assert line["invoice_id"] == str(invoice_id)
    assert line["amount"] == "0.1"

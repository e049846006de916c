"""Receivers that misbehave on purpose: a drip-feeding one, and a secret the worker cannot decrypt."""

from __future__ import annotations

import hmac
import socket
import threading
from collections.abc import Iterator
from datetime import timedelta
from io import StringIO

import pytest
from cryptography.fernet import Fernet
from django.utils import timezone

from payments.models import Company
from payments.services import (
    company_previous_signing_secret,
    company_rotate_signing_secret,
    company_set_webhook_url,
)
from webhooks.delivery import webhook_deliver
from webhooks.models import WebhookAttempt, WebhookEvent
from webhooks.tests.events import publish

pytestmark = pytest.mark.django_db


class DripServer:
    """Accepts connections, reads the request, then answers one byte every `interval` seconds."""

    def __init__(self, interval: float, *, first_at_once: bool = False) -> None:
        self.interval = interval
        # Answer a connection's first request at once, keeping the connection open; drip the next one.
        self.first_at_once = first_at_once
        self.stop = threading.Event()
        self.connections = 0
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                conn.recv(65536)
                if self.first_at_once:
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    conn.recv(65536)  # the next request, on the same connection
                for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok":
                    if self.stop.wait(self.interval):
                        return
                    try:
                        conn.sendall(bytes([byte]))
                    except OSError:
                        break  # the client cut the connection: the deadline worked

    def __enter__(self) -> DripServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.listener.close()
        self.thread.join(5)


@pytest.fixture
def drip(merchant, settings) -> Iterator[DripServer]:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    settings.WEBHOOK_TOTAL_TIMEOUT_SECONDS = 1  # the real deadline is 10 s; the mechanism is the same
    settings.WEBHOOK_CONNECT_TIMEOUT_SECONDS = 1
    with DripServer(interval=0.25) as server:
        company_set_webhook_url(company_id=merchant.company.pk, url=f"http://127.0.0.1:{server.port}/hook")
        merchant.company.refresh_from_db()
        yield server


def test_drip_feeding_receiver_is_cut_at_deadline_and_backs_off(merchant, drip):
    event = publish(merchant.company)

    attempt = webhook_deliver(event_id=event.pk)

    # Every byte came within the per-read timeout, yet the whole answer took longer than the deadline.
    assert attempt is not None and not attempt.succeeded
    assert "deadline exceeded" in attempt.error
    event.refresh_from_db()
    assert event.status == WebhookEvent.Status.PENDING
    assert event.attempt_count == 1
    assert event.lease_token is None  # released: no second copy runs beside it
    assert event.next_attempt_at > timezone.now()  # backing off per the schedule, not re-sent at once
    assert WebhookAttempt.objects.filter(event=event).count() == 1


def test_a_kept_alive_connection_is_cut_at_the_deadline_too(merchant, settings):
    """Deliveries reuse a receiver's connection; the deadline cuts a reused socket as it cuts a new one."""
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    settings.WEBHOOK_TOTAL_TIMEOUT_SECONDS = 1
    with DripServer(interval=0.25, first_at_once=True) as server:
        company_set_webhook_url(company_id=merchant.company.pk, url=f"http://127.0.0.1:{server.port}/hook")
        merchant.company.refresh_from_db()
        first, second = publish(merchant.company), publish(merchant.company)

        assert webhook_deliver(event_id=first.pk).succeeded  # type: ignore[union-attr]
        attempt = webhook_deliver(event_id=second.pk)

    assert server.connections == 1  # the second POST went over the first one's connection
    assert attempt is not None and "deadline exceeded" in attempt.error
    assert attempt.duration_ms < 5000  # cut near 1 s; the dripped answer alone takes about 10 s


def test_lease_outlasts_delivery_deadline(settings):
    from django.core.checks import run_checks

    settings.WEBHOOK_LEASE_SECONDS = settings.WEBHOOK_TOTAL_TIMEOUT_SECONDS + 5

    too_short = [message.id for message in run_checks(tags=["kassa_deploy"], include_deployment_checks=True)]
    settings.WEBHOOK_LEASE_SECONDS = 60
    long_enough = [
        message.id for message in run_checks(tags=["kassa_deploy"], include_deployment_checks=True)
    ]

    assert "kassa.E007" in too_short
    assert "kassa.E007" not in long_enough


def test_undecryptable_secret_records_failed_attempt(merchant, settings, caplog):
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    company_set_webhook_url(company_id=merchant.company.pk, url="http://127.0.0.1:9/hook")
    merchant.company.refresh_from_db()
    event = publish(merchant.company)
    # A worker started with another key than the one that encrypted the secrets.
    settings.FIELD_ENCRYPTION_KEY = Fernet.generate_key().decode()

    attempt = webhook_deliver(event_id=event.pk)

    assert attempt is not None and not attempt.succeeded
    assert "cannot be decrypted" in attempt.error
    event.refresh_from_db()
    assert event.attempt_count == 1 and event.next_attempt_at is not None
    assert any("cannot be decrypted" in record.getMessage() for record in caplog.records)


def test_http_webhook_url_refused_in_production(api, merchant, settings):
    settings.WEBHOOK_ALLOW_HTTP = False  # the production default

    plain = api.put(
        "/api/company/settings/webhook-url", {"webHookUrl": "http://93.184.215.14/hook"}, format="json"
    )
    secure = api.put(
        "/api/company/settings/webhook-url", {"webHookUrl": "https://93.184.215.14/hook"}, format="json"
    )

    assert plain.status_code == 400
    assert plain["Content-Type"] == "application/problem+json"
    problem = plain.json()
    assert problem["code"] == "validation_error"
    assert [error["field"] for error in problem["errors"]] == ["webHookUrl"]
    assert "must use https" in problem["errors"][0]["message"]
    assert secure.status_code == 200
    merchant.company.refresh_from_db()
    assert merchant.company.webhook_url == "https://93.184.215.14/hook"


def test_http_url_saved_earlier_is_not_sent_in_production(merchant, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    company_set_webhook_url(company_id=merchant.company.pk, url="http://127.0.0.1:9/hook")
    merchant.company.refresh_from_db()
    event = publish(merchant.company)
    settings.WEBHOOK_ALLOW_HTTP = False

    attempt = webhook_deliver(event_id=event.pk)

    assert attempt is not None and not attempt.succeeded
    assert "plain http" in attempt.error


def _delivered_after_rotation(merchant, settings, *, overlap_over: bool):
    """Rotate the secret (24 h overlap, or one already over) and deliver one event: (old, new, received)."""
    from webhooks.receiver import WebhookReceiver

    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    old = merchant.signing_secret
    with WebhookReceiver() as receiver:
        company_set_webhook_url(company_id=merchant.company.pk, url=receiver.url)
        new = company_rotate_signing_secret(company_id=merchant.company.pk, overlap=timedelta(hours=24))
        if overlap_over:
            Company.objects.filter(pk=merchant.company.pk).update(
                previous_signing_secret_until=timezone.now() - timedelta(seconds=1)
            )
        merchant.company.refresh_from_db()
        webhook_deliver(event_id=publish(merchant.company).pk)
    (got,) = receiver.received
    return old, new, got


def test_both_secrets_sign_during_rotation_overlap(merchant, settings):
    from webhooks.signing import signature, verify

    old, new, got = _delivered_after_rotation(merchant, settings, overlap_over=False)

    assert len(got.headers["webhook-signature"].split()) == 2
    # The delivered headers as they are: a receiver holding either secret verifies them.
    assert verify(old, got.body, got.headers)
    assert verify(new, got.body, got.headers)
    assert not verify("whsec_" + "A" * 43 + "=", got.body, got.headers)
    # `signature` keeps the secret receivers hold; the new one's value travels beside it.
    assert got.headers["signature"] == signature(old, got.body)
    assert got.headers["signature-next"] == signature(new, got.body)


def test_old_secret_stops_signing_after_overlap(merchant, settings):
    from webhooks.signing import verify

    old, new, got = _delivered_after_rotation(merchant, settings, overlap_over=True)

    assert len(got.headers["webhook-signature"].split()) == 1
    assert "signature-next" not in got.headers
    assert verify(new, got.body, got.headers)
    assert not verify(old, got.body, {k: v for k, v in got.headers.items() if k != "signature"})


def test_a_receiver_checking_signature_alone_keeps_verifying_across_a_rotation(merchant, settings):
    """The recipe of the spec: `signature` checked against the one secret the receiver holds. It holds the
    old secret until the overlap ends, then the new one; every webhook along the way passes it."""
    from webhooks.receiver import Received, WebhookReceiver
    from webhooks.signing import signature

    def delivered(status: str) -> Received:
        merchant.company.refresh_from_db()
        webhook_deliver(event_id=publish(merchant.company, status=status).pk)
        return receiver.received[-1]

    def recipe(secret: str, got: Received) -> bool:
        return hmac.compare_digest(got.headers["signature"], signature(secret, got.body))

    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    old = merchant.signing_secret
    with WebhookReceiver() as receiver:
        company_set_webhook_url(company_id=merchant.company.pk, url=receiver.url)
        before = delivered("created")
        new = company_rotate_signing_secret(company_id=merchant.company.pk, overlap=timedelta(hours=24))
        during = delivered("pending")
        Company.objects.filter(pk=merchant.company.pk).update(
            previous_signing_secret_until=timezone.now() - timedelta(seconds=1)
        )
        after = delivered("processing")

    assert recipe(old, before) and "signature-next" not in before.headers
    assert recipe(old, during) and not recipe(new, during)  # nobody has to switch at the rotation
    assert during.headers["signature-next"] == signature(new, during.body)  # what to switch to
    assert recipe(new, after) and "signature-next" not in after.headers  # the switch: the overlap's end


def test_rotate_command_with_zero_overlap_drops_the_old_secret_at_once(merchant):
    from django.core.management import call_command

    call_command(
        "rotate_signing_secret", "--email", "owner@acme.test", "--overlap-hours", "0", stdout=StringIO()
    )

    merchant.company.refresh_from_db()
    assert merchant.company.previous_signing_secret_until is None
    assert company_previous_signing_secret(merchant.company) is None


class ListeningServer:
    """A loopback listener that counts every connection it accepts (and answers none)."""

    def __init__(self) -> None:
        self.connections = 0
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.listener.settimeout(0.1)
        self.port = self.listener.getsockname()[1]

    def accept_pending(self) -> int:
        """Connections that reached the listener so far (the backlog is drained without waiting)."""
        while True:
            try:
                conn, _ = self.listener.accept()
            except (TimeoutError, OSError):
                return self.connections
            conn.close()
            self.connections += 1


def test_worker_refuses_loopback_address_resolved_after_save(merchant, settings, monkeypatch, caplog):
    from core import ssrf

    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = False  # the production default
    server = ListeningServer()
    answers: dict[str, str] = {}

    def resolver(host, port, family=0, type=0, proto=0, flags=0):
        if host not in answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (answers[host], port))]

    monkeypatch.setattr(ssrf, "_getaddrinfo", resolver)
    try:
        # The name does not resolve when the merchant saves it, so the save-time check lets it through...
        company_set_webhook_url(
            company_id=merchant.company.pk, url=f"http://hooks.rebind.example:{server.port}/hook"
        )
        merchant.company.refresh_from_db()
        event = publish(merchant.company)
        # ...and later it answers with the loopback address, where the receiver listens.
        answers["hooks.rebind.example"] = "127.0.0.1"

        with caplog.at_level("WARNING", logger="webhooks.http"):
            attempt = webhook_deliver(event_id=event.pk)

        assert attempt is not None and not attempt.succeeded
        assert attempt.status_code is None
        assert "refused by the SSRF guard" in attempt.error and "127.0.0.1" in attempt.error
        assert any("refused by the SSRF guard" in record.getMessage() for record in caplog.records)
        event.refresh_from_db()
        assert event.status == WebhookEvent.Status.PENDING and event.attempt_count == 1
        assert server.accept_pending() == 0  # the loopback receiver never saw a connection
    finally:
        server.listener.close()

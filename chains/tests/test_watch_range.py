"""Deposit addresses are handed out only inside the range the node watches: past it, a 503 that changes
nothing while the range is extended; near its end, the extension is asked for ahead of time."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from chains import deposit_addresses
from chains.models import WatchRange
from chains.sandbox import SandboxBackend
from chains.scanning import WATCH_AHEAD, chain_watch
from core.enqueue import TaskRef
from payments.models import DepositAddress, DerivationCounter
from tests.factories import InvoiceFactory
from tests.outages import redis_down_caches

pytestmark = pytest.mark.django_db

STATIC = "/api/addresses/v1/static-deposits"


class WatchingNode(SandboxBackend):
    """A node that must be told which addresses to watch (as a Bitcoin Core watch-only wallet)."""

    name = "watching"
    watches_addresses = True
    imported: list[int] = []

    def ensure_watched(self, code: str, upto_index: int) -> int:
        type(self).imported.append(upto_index)
        return upto_index


class Messages:
    """The task messages sent (TaskRef.delay), as (task name, args)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, tuple]] = []

    def record(self, ref: str, *args: object) -> None:
        self.sent.append((str(ref), args))


@pytest.fixture
def node(settings, monkeypatch):
    settings.CHAIN_BACKENDS = {"ltc": "chains.tests.test_watch_range.WatchingNode"}
    WatchingNode.imported = []
    messages = Messages()
    monkeypatch.setattr(TaskRef, "delay", lambda ref, *args: messages.record(ref, *args))
    cache.delete(deposit_addresses.KICK_KEY.format("ltc"))  # asked for by an earlier test within 30 s
    return messages


def _handed_out(index: int, watched: int | None) -> None:
    DerivationCounter.objects.update_or_create(family="ltc", defaults={"next_index": index})
    if watched is not None:
        WatchRange.objects.create(code="ltc", watched_until=watched)


def _ask(api, user: str = "user-1"):
    return api.post(STATIC, {"internal_user_id": user, "asset": "ltc", "network": "ltc"}, format="json")


def test_past_the_watched_range_the_address_is_refused_with_a_503_and_nothing_changes(api, node):
    _handed_out(11, watched=10)

    response = _ask(api)

    assert response.status_code == 503
    assert response["Content-Type"] == "application/problem+json"
    assert response["Retry-After"] == "60"
    assert response.json()["code"] == "deposit_addresses_unavailable"
    assert DerivationCounter.objects.get(family="ltc").next_index == 11
    assert not DepositAddress.objects.exists()
    assert node.sent == [(deposit_addresses.WATCH_TASK, ("ltc",))]


def test_before_the_node_watches_anything_no_address_is_handed_out(api, node):
    _handed_out(0, watched=None)

    assert _ask(api).status_code == 503


def test_once_the_range_is_extended_the_same_request_gets_its_address(api, node):
    _handed_out(11, watched=10)
    assert _ask(api).status_code == 503

    chain_watch("ltc")  # what the message asks the chain worker to do

    assert WatchingNode.imported == [11 + WATCH_AHEAD]
    assert WatchRange.objects.get(code="ltc").watched_until == 11 + WATCH_AHEAD
    response = _ask(api)
    assert response.status_code == 201
    assert DepositAddress.objects.get().derivation_index == 11


def test_near_the_end_of_the_range_the_extension_is_asked_for_once(
    api, node, django_capture_on_commit_callbacks
):
    _handed_out(10, watched=10 + WATCH_AHEAD // 2 - 1)  # fewer than half of WATCH_AHEAD left

    with django_capture_on_commit_callbacks(execute=True):
        first = _ask(api, "user-1")
        second = _ask(api, "user-2")

    assert (first.status_code, second.status_code) == (201, 201)
    assert node.sent == [(deposit_addresses.WATCH_TASK, ("ltc",))]


def test_near_the_end_of_the_range_with_redis_down_the_address_is_handed_out_and_the_scan_extends(
    api, node, settings, django_capture_on_commit_callbacks
):
    _handed_out(10, watched=10 + WATCH_AHEAD // 2 - 1)
    settings.CACHES = redis_down_caches()

    with django_capture_on_commit_callbacks(execute=True):
        response = _ask(api)

    assert response.status_code == 201
    assert node.sent == []  # the broker is on that Redis too: beat's chain scan extends the range


def test_well_inside_the_range_nothing_is_asked(api, node, django_capture_on_commit_callbacks):
    _handed_out(10, watched=10 + WATCH_AHEAD)

    with django_capture_on_commit_callbacks(execute=True):
        assert _ask(api).status_code == 201

    assert node.sent == []


def test_the_pay_page_says_the_currency_cannot_take_payments_yet(client, node):
    _handed_out(11, watched=10)
    invoice = InvoiceFactory(payment_currency="ltc")

    response = client.post(f"/{invoice.pk}", {"email": "client@example.com", "asset": "ltc"})

    assert response.status_code == 503
    assert "cannot take payments right now" in response.content.decode()
    invoice.refresh_from_db()
    assert invoice.status == "created"

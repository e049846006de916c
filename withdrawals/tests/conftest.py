"""Helpers shared by the withdrawal tests: balances are funded through the real ledger (tests.chain.fund)
or the sandbox API (tests.chain.api_pay, api_mine)."""

import json
from decimal import Decimal

import pytest
from django.conf import settings
from django.core.cache import cache
from rest_framework.test import APIClient

from payments.models import Account
from tests import chain
from webhooks.models import WebhookEvent

WITHDRAW = "/api/transactions/withdraw"
LIST = "/api/transactions/withdrawals"
AUTO = "/api/company/auto-withdrawals"

# Valid mainnet addresses per family (pinned by chains/tests/test_addresses.py).
ADDRESSES = {
    "btc": "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq",
    "eth": "0x52908400098527886E0F7030069857D2E4169EE7",
    "trc20usdt": "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",
    "trx": "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",
    "ltc": "LT2KVaAy1ppRuxRgrS5RNU3vBsy7RibPeA",
    "ton": "EQDKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPrHF",
}


@pytest.fixture(autouse=True)
def _clean_rates_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def funded(merchant):
    """The merchant with a balance in the codes the API tests withdraw (btc, eth, trx, ltc, ton)."""
    for code, amount in {"btc": "1", "eth": "1", "trx": "1000", "ltc": "10", "ton": "100"}.items():
        chain.fund(merchant.company, code, amount)
    return merchant


def balance(company, code):
    account = Account.objects.filter(company=company, code=code).first()
    if account is None:
        return Decimal(0), Decimal(0)
    return account.available.normalize(), account.held.normalize()


def item(asset="btc", amount="0.001", to=None, **extra):
    body = {"amount": amount, "to": to if to is not None else ADDRESSES[asset.lower()], "asset": asset}
    body.update(extra)
    return body


def withdraw(client, *items, headers=None):
    return client.post(WITHDRAW, {"items": list(items)}, format="json", headers=headers or {})


def run_broadcasts():
    """What a worker does with the queued payout messages (the test broker keeps them in memory)."""
    chain.send_payouts()


def withdrawal_events(uid):
    events = WebhookEvent.objects.filter(family="withdrawal", object_id=uid).order_by("created_at", "pk")
    return [json.loads(e.body, parse_float=Decimal) for e in events]


def client_for(merchant):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {merchant.public_token}")
    return client


def drain_broker():
    """A worker in this process: run every message the in-memory test broker holds, until none is left.

    Only messages of committed transactions are there (delay_on_commit), so tests using it run with
    `transaction=True`. Returns the task names run, in order.
    """
    from config.celery import app

    ran: list[str] = []
    with app.connection_for_read() as connection:
        while True:
            before = len(ran)
            for queue_name in settings.CELERY_TASK_QUEUE_NAMES:
                queue = connection.SimpleQueue(queue_name)
                try:
                    while True:
                        try:
                            message = queue.get(block=False)
                        except queue.Empty:
                            break
                        name = message.headers["task"]
                        args, kwargs, _ = message.decode()
                        message.ack()
                        app.tasks[name](*args, **kwargs)
                        ran.append(name)
                finally:
                    queue.close()
            if len(ran) == before:
                return ran

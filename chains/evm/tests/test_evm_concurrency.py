"""EVM nonces under concurrent planners on PostgreSQL (real row locks): gapless, never used twice."""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest

from chains.evm.node import hot_address
from chains.models import ChainTx, NonceSlot
from tests.chain import fund
from tests.evm import eth_tester_chain
from tests.factories import CompanyFactory
from tests.workers import run_together
from withdrawals import payouts
from withdrawals.models import Withdrawal
from withdrawals.rules import WithdrawalItem
from withdrawals.services import withdrawal_request

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_concurrent_planners_use_every_nonce_once_without_gaps(settings):
    chain = eth_tester_chain()
    settings.CHAIN_BACKENDS = {"eth": "evm"}
    settings.CHAIN_NODES = chain.nodes(token=False)
    backend = chain.backend()
    chain.fund_hot(eth="100")
    # eth-tester is one in-process chain: the planners' node calls take turns (their database work does not).
    lock = threading.Lock()
    real_w3 = backend.w3

    def w3(code):
        inner = real_w3(code)
        return _Locked(inner, lock)

    backend.w3 = w3  # type: ignore[method-assign]
    company = CompanyFactory()
    fund(company, "eth", "100")
    items = [
        WithdrawalItem(
            asset="eth", amount=Decimal("0.1") + Decimal(n) / 100, to="0x" + f"{n + 1:02x}" * 20, tag=""
        )
        for n in range(12)
    ]
    withdrawal_request(company=company, items=items)

    rounds = 0
    while payouts._due("eth") and rounds < 10:  # the planners' own loop: a plan that lost is planned again
        rounds += 1
        run_together([lambda: payouts._plan("eth") for _ in range(4)])
        # What was stored goes out and is mined (eth-tester mines at once): a plan that lost its nonce is
        # signed again with a new one only once another transaction has used the old one.
        payouts.payout_monitor("eth", plan=False)

    nonces = sorted(ChainTx.objects.values_list("nonce", flat=True))
    assert nonces == list(range(12))
    assert NonceSlot.objects.get(address=hot_address().lower()).next_nonce == 12
    for withdrawal in Withdrawal.objects.all():
        assert withdrawal.chain_links.count() == 1
    assert [chain.balance(item.to) for item in items] == [item.amount for item in items]  # each paid once


class _Locked:
    """A Web3 whose `eth` calls hold one lock (eth-tester is not thread-safe)."""

    def __init__(self, w3, lock):
        self._w3, self._lock = w3, lock
        self.eth = _LockedEth(w3.eth, lock)

    def __getattr__(self, name):
        return getattr(self._w3, name)


class _LockedEth:
    def __init__(self, eth, lock):
        self._eth, self._lock = eth, lock

    def __getattr__(self, name):
        target = getattr(self._eth, name)
        if not callable(target):
            with self._lock:
                return target

        def call(*args, **kwargs):
            with self._lock:
                return target(*args, **kwargs)

        return call

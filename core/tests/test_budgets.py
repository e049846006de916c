"""Request budgets counted in leases (core.budgets): the processes together never let more than the
limit through, a small budget is counted request by request, a large one costs one round trip per lease."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.conf import settings
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from core import budgets

WINDOW = 1_800_000_000  # a multiple of 60


@pytest.fixture(autouse=True)
def _no_leases():  # type: ignore[no-untyped-def]
    budgets.forget_leases()
    yield
    budgets.forget_leases()


class Process:
    """One web process: its own leases, the shared store."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.leases: dict[str, tuple[int, int]] = {}

    def take(self, key: str, limit: int, *, now: float = WINDOW + 1.0) -> bool:
        saved = dict(budgets._leases)
        budgets._leases.clear()
        budgets._leases.update(self.leases)
        try:
            allowed, _ = budgets.budget_take(key, limit, 60, now=now, name="test", store=self.store)
        finally:
            self.leases = dict(budgets._leases)
            budgets._leases.clear()
            budgets._leases.update(saved)
        return allowed


def _local() -> LocMemCache:
    return LocMemCache(f"budget-{uuid.uuid4().hex}", {})


def _redis() -> RedisCache:
    return RedisCache(settings.REDIS_URL, {"KEY_PREFIX": f"kassa-test-{uuid.uuid4().hex[:8]}"})


@pytest.fixture
def counts(monkeypatch) -> list[int]:  # type: ignore[no-untyped-def]
    """What each round trip to the shared counter added (its `by`)."""
    calls: list[int] = []
    real = budgets.count
    monkeypatch.setattr(budgets, "count", lambda *a, **k: calls.append(k["by"]) or real(*a, **k))
    return calls


def test_a_budget_under_two_hundred_a_window_is_counted_request_by_request(counts):
    process = Process(_local())

    allowed = [process.take("k", 3) for _ in range(5)]

    assert allowed == [True, True, True, False, False]
    assert counts == [1] * 5


def test_a_large_budget_costs_one_count_per_lease(counts):
    store = _local()
    process = Process(store)

    allowed = [process.take("k", 1000) for _ in range(25)]

    assert all(allowed)
    assert counts == [10, 10, 10]  # leases of 1 % of the limit
    assert store.get("k:" + str(WINDOW)) == 30


def test_the_last_lease_of_a_window_is_cut_to_what_is_left_and_then_refused():
    store = _local()
    first, second = Process(store), Process(store)

    taken = [first.take("k", 250) for _ in range(249)]  # leases of 2: 250 handed out, one left in `first`
    assert all(taken)
    assert second.take("k", 250) is False  # nothing left to lease, though `first` still holds one
    assert first.take("k", 250) is True  # which `first` spends
    assert first.take("k", 250) is False


def test_a_new_window_opens_a_new_budget():
    process = Process(_local())
    assert [process.take("k", 2) for _ in range(3)] == [True, True, False]

    assert process.take("k", 2, now=WINDOW + 61.0) is True


@pytest.mark.redis
def test_on_redis_processes_share_the_count_and_it_expires_with_its_window():
    store = _redis()
    processes = [Process(store) for _ in range(3)]

    allowed = sum(process.take("k", 300) for _ in range(150) for process in processes)

    full = store.make_and_validate_key(f"k:{WINDOW}")
    client = store._cache.get_client(full)
    assert allowed == 300  # each process leases 3 at a time: 300 handed out exactly, then refused
    assert int(client.get(full)) >= 300
    assert 0 < client.ttl(full) <= 61


@hypothesis_settings(max_examples=60, deadline=None)
@given(
    limit=st.integers(min_value=1, max_value=2_000),
    order=st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=3_000),
)
def test_processes_together_never_pass_more_than_the_limit(limit, order):
    budgets.forget_leases()
    store = _local()
    processes = [Process(store) for _ in range(4)]

    allowed = sum(processes[index].take("k", limit) for index in order)

    assert allowed <= limit
    # Refused early only by requests leased to the other processes and not yet spent.
    unspent = sum(left for process in processes for _, left in process.leases.values())
    assert allowed >= min(limit, len(order)) - unspent

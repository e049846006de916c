"""Request budgets: N requests per fixed window per key (an API token, a client address), across every
web process, counted in the shared cache (Redis in production) in leases.

Windows start at multiples of their length, one counter each. A process does not count every request in
Redis: it takes a *lease* of several requests at once (`INCRBY`), and spends it locally until it is gone
or its window ends. The counter in Redis is the sum of every lease handed out, so the processes together
never let more than the limit through: a budget can only be refused early (by the requests leased to
other processes and not yet spent), never late. A lease is 1 % of the limit (at most `MAX_LEASE`), so a
small budget (the documented 120/min of the public invoice pages, 600/min of a token) leases one to six
requests at a time and a budget of thousands makes one round trip per hundred requests.

When the shared cache fails, the leases come from this process's own counter, with the same limit
(core.throttle.shared): a budget that cannot be counted in Redis is never an error.
"""

from __future__ import annotations

import threading

from django.core.cache import cache
from django.core.cache.backends.base import BaseCache
from django.core.signals import setting_changed

from core.throttle import count, shared

MAX_LEASE = 100
MAX_KEYS = 10_000  # leases kept per process; past it all are dropped (their calls are lost to their window)

_leases: dict[str, tuple[int, int]] = {}  # budget key -> (its window's start, requests left in the lease)
_lock = threading.Lock()


def lease_size(limit: int) -> int:
    return max(1, min(MAX_LEASE, limit // 100))


def budget_take(
    key: str, limit: int, seconds: int, *, now: float, name: str, store: BaseCache = cache
) -> tuple[bool, float]:
    """One more request of `key`'s budget of `limit` per `seconds`: whether it fits the window that holds
    `now`, and when that window ends. `name` names the budget in the metric of local counts."""
    start = int(now) // seconds * seconds
    end = float(start + seconds)
    with _lock:
        window, left = _leases.get(key, (-1, 0))
        if window == start and left > 0:
            _leases[key] = (start, left - 1)
            return True, end
    size = lease_size(limit)
    handed_out = shared(
        name,
        lambda shared_store: count(f"{key}:{start}", seconds + 1, store=shared_store, by=size),
        store=store,
    )
    before = handed_out - size  # what the other leases of this window hold
    if before >= limit:
        return False, end
    granted = min(size, limit - before)
    with _lock:
        if len(_leases) >= MAX_KEYS:
            _leases.clear()
        _leases[key] = (start, granted - 1)
    return True, end


def forget_leases() -> None:
    """Drop this process's leases (their requests are lost to the window, as when a process exits)."""
    with _lock:
        _leases.clear()


def _on_setting_changed(*, setting: str, **kwargs: object) -> None:
    if setting in {"API_TOKEN_RATE", "REST_FRAMEWORK", "CACHES"}:
        forget_leases()


setting_changed.connect(_on_setting_changed, dispatch_uid="kassa-budget-leases")

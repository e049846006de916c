"""Failed dashboard logins counted per (username, client IP) in the shared cache (Redis in production).

After DASHBOARD_LOGIN_FAILURE_LIMIT failures within DASHBOARD_LOGIN_FAILURE_WINDOW_SECONDS of the first one,
that pair is refused until the window ends, even with the right password: a guessed password must not be
confirmed. Per pair, not per username alone, so an attacker cannot lock the owner out from elsewhere.
The same counter guards the password confirmation that reveals the signing secret.
"""

from __future__ import annotations

import hashlib
import time

from django.conf import settings
from django.core.cache import cache
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.redis import RedisCache
from django.http import HttpRequest


def _limit() -> int:
    return int(settings.DASHBOARD_LOGIN_FAILURE_LIMIT)


def window_seconds() -> int:
    return int(settings.DASHBOARD_LOGIN_FAILURE_WINDOW_SECONDS)


def client_ip(request: HttpRequest) -> str:
    """REMOTE_ADDR, or the address the NUM_PROXIES trusted proxies saw (as DRF's throttles read it)."""
    proxies = int(settings.NUM_PROXIES or 0)
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if proxies and forwarded:
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if hops:
            return hops[-min(proxies, len(hops))]
    return str(request.META.get("REMOTE_ADDR", ""))


def _key(scope: str, username: str, ip: str) -> str:
    ident = hashlib.sha256(f"{username.strip().lower()}\x00{ip}".encode()).hexdigest()
    return f"dashboard:{scope}-failures:{ident}"


def _now() -> float:
    """The clock of the window (tests move it)."""
    return time.time()


def _window_open(key: str) -> bool:
    """The pair's window, started by its first failure, has not ended (the cache entries outlive it)."""
    since = cache.get(f"{key}:since")
    return since is not None and _now() - float(since) < window_seconds()


def is_locked(scope: str, username: str, ip: str) -> bool:
    key = _key(scope, username, ip)
    return _window_open(key) and int(cache.get(key, 0)) >= _limit()


def record_failure(scope: str, username: str, ip: str) -> int:
    """Count one failure; the window starts at the first failure and is not extended by later ones."""
    key = _key(scope, username, ip)
    if not _window_open(key):
        cache.delete_many([key, f"{key}:since"])  # a new window
    # Both expire with the window: the cache cleans up, the timestamp decides.
    cache.add(f"{key}:since", _now(), timeout=window_seconds() + 1)
    return count(key, window_seconds() + 1)


def count(key: str, seconds: int, *, store: BaseCache = cache) -> int:
    """One more in `key`'s counter in the shared cache, created at 1 to expire after `seconds`; the new
    count. Atomic across processes, whatever the count: on Redis one script (one round trip), elsewhere
    add, then incr."""
    if isinstance(store, RedisCache):
        full_key = store.make_and_validate_key(key)
        client = store._cache.get_client(full_key, write=True)
        return int(client.register_script(_COUNT_SCRIPT)(keys=[full_key], args=[seconds]))
    if store.add(key, 1, timeout=seconds):
        return 1
    try:
        return int(store.incr(key))
    except ValueError:  # expired between add and incr: this one opens it again
        store.set(key, 1, timeout=seconds)
        return 1


# INCR creates a missing counter at 1; only then is its expiry set, in the same atomic step, so a counter
# never lives without one. The value stays a plain integer, as the cache's own `add` and `get` read it.
_COUNT_SCRIPT = """
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return count
"""


def clear(scope: str, username: str, ip: str) -> None:
    key = _key(scope, username, ip)
    cache.delete_many([key, f"{key}:since"])

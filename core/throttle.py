"""Failed secrets (dashboard and admin log-in, authenticator codes, step-up) counted in the shared cache
(Redis in production), each under its caller's scope name; and the budgets of account mail.

Every failure counts in three windows of DASHBOARD_LOGIN_FAILURE_WINDOW_SECONDS, each started by its own
first failure:

- per (username, client IP): DASHBOARD_LOGIN_FAILURE_LIMIT. One guesser at one account.
- per username, from any address: DASHBOARD_LOGIN_ACCOUNT_FAILURE_LIMIT. One account guessed from many
  addresses (a botnet), which the first counter never sees.
- per client IP, whatever the username: DASHBOARD_LOGIN_IP_FAILURE_LIMIT. One password sprayed over many
  accounts from one address.

Any counter at its limit refuses the attempt before the secret is checked, even the right one: a guessed
password must not be confirmed. A success clears only the (username, IP) pair: clearing the address's
counter would let an attacker keep spraying by logging in to an account of their own between guesses, and
the account's counter is cleared by a password reset (`clear_account`), the owner's way back in when
someone else has run it up (docs/security.md).

A throttle that cannot count must not take the site down: when the shared cache fails (Redis down or
unreachable), every counter here and in core.budgets counts in this process's memory instead, with
the same limits (`shared`). Each process then enforces them on its own until Redis answers again; it says
so in a warning (at most one a minute) and in the metric `kassa_throttle_local_counts_total`.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.core.cache import DEFAULT_CACHE_ALIAS, cache, caches
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from django.http import HttpRequest
from redis.exceptions import RedisError

from core import metrics

logger = logging.getLogger(__name__)

T = TypeVar("T")

# What a shared cache that cannot be reached raises: redis-py's errors (refused, timed out, reset), and
# the socket's own for any other backend.
SHARED_CACHE_FAILURES = (RedisError, OSError)
WARNING_SECONDS = 60.0  # at most one warning per process this often while the shared cache fails
# After a failure the shared cache is left alone this long: an unreachable Redis costs its connect timeout
# once per this many seconds, not on every request.
RETRY_SECONDS = 5.0

# This process's counters while the shared cache fails (bounded: past MAX_ENTRIES a third are dropped).
local = LocMemCache("kassa-throttle-local", {"TIMEOUT": None, "OPTIONS": {"MAX_ENTRIES": 100_000}})
_state = {"down_until": float("-inf"), "warned_at": float("-inf"), "since_warning": 0}
_state_lock = threading.Lock()


def shared(throttle: str, operation: Callable[[BaseCache], T], *, store: BaseCache = cache) -> T:
    """`operation` on the shared cache `store`; when that fails, and for RETRY_SECONDS after, on this
    process's own counters (`local`), logged and counted (`throttle` names it in the metric)."""
    if time.monotonic() >= _state["down_until"]:
        try:
            return operation(store)
        except SHARED_CACHE_FAILURES as exc:
            _counted_locally(throttle, exc)
            return operation(local)
    _counted_locally(throttle, None)
    return operation(local)


def _counted_locally(throttle: str, exc: Exception | None) -> None:
    metrics.throttle_counted_locally(throttle)
    now = time.monotonic()
    with _state_lock:
        if exc is not None:
            _state["down_until"] = now + RETRY_SECONDS
        _state["since_warning"] += 1
        if exc is None or now - _state["warned_at"] < WARNING_SECONDS:
            return
        counted, _state["warned_at"], _state["since_warning"] = _state["since_warning"], now, 0
    logger.warning(
        "the shared cache failed (%s: %s): rate limits count in this process only (%s; %d local count(s) "
        "since the last warning)",
        type(exc).__name__,
        exc,
        throttle,
        counted,
    )


def _limit() -> int:
    return int(settings.DASHBOARD_LOGIN_FAILURE_LIMIT)


def window_seconds() -> int:
    return int(settings.DASHBOARD_LOGIN_FAILURE_WINDOW_SECONDS)


def client_ip(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, or with NUM_PROXIES proxies in front the hop that many places
    from the right of X-Forwarded-For, the one the outermost trusted proxy wrote (as DRF's throttles read
    it). Hops further left are the client's own claims and never chosen; docs/operations.md (TLS and
    proxies) has the proxy setup this relies on."""
    proxies = int(settings.NUM_PROXIES or 0)
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if proxies and forwarded:
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if hops:
            return hops[-min(proxies, len(hops))]
    return str(request.META.get("REMOTE_ADDR", ""))


def _hash(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def _username(username: str) -> str:
    return username.strip().lower()


def _key(scope: str, username: str, ip: str) -> str:
    return f"dashboard:{scope}-failures:{_hash(_username(username), ip)}"


def _account_key(scope: str, username: str) -> str:
    return f"dashboard:{scope}-account-failures:{_hash(_username(username))}"


def _ip_key(scope: str, ip: str) -> str:
    return f"dashboard:{scope}-ip-failures:{_hash(ip)}"


def _counters(scope: str, username: str, ip: str) -> list[tuple[str, int]]:
    """(cache key, limit) of each counter an attempt by `username` from `ip` counts in."""
    counters = [(_key(scope, username, ip), _limit())]
    if _username(username):
        counters.append((_account_key(scope, username), int(settings.DASHBOARD_LOGIN_ACCOUNT_FAILURE_LIMIT)))
    if ip:
        counters.append((_ip_key(scope, ip), int(settings.DASHBOARD_LOGIN_IP_FAILURE_LIMIT)))
    return counters


def _now() -> float:
    """The clock of the windows (tests move it)."""
    return time.time()


def _is_full(values: dict[str, object], key: str, limit: int, seconds: int) -> bool:
    """`key`'s window, started by its first event, is still open and holds `limit` events (the cache
    entries outlive the window by a second: the timestamp decides)."""
    since = values.get(f"{key}:since")
    if since is None or _now() - float(str(since)) >= seconds:
        return False
    return int(str(values.get(key) or 0)) >= limit


def _record(store: BaseCache, key: str, seconds: int) -> int:
    """Count one event in `key`'s window, opening a new window when the last one ended; the new count.
    The window starts at its first event and is not extended by later ones."""
    since = store.get(f"{key}:since")
    if since is None or _now() - float(since) >= seconds:
        store.delete_many([key, f"{key}:since"])
    store.add(f"{key}:since", _now(), timeout=seconds + 1)
    return count(key, seconds + 1, store=store)


def is_locked(scope: str, username: str, ip: str) -> bool:
    """Any of the three counters of this attempt is at its limit (one cache round trip)."""
    counters = _counters(scope, username, ip)
    names = [name for key, _ in counters for name in (key, f"{key}:since")]
    values = shared(scope, lambda store: store.get_many(names))
    seconds = window_seconds()
    return any(_is_full(values, key, limit, seconds) for key, limit in counters)


def record_failure(scope: str, username: str, ip: str) -> int:
    """Count one failure in each counter; the (username, IP) pair's new count."""
    seconds = window_seconds()
    keys = [key for key, _ in _counters(scope, username, ip)]
    counts = shared(scope, lambda store: [_record(store, key, seconds) for key in keys])
    return counts[0]


def clear(scope: str, username: str, ip: str) -> None:
    """A success: the pair's count ends (never the address's, nor the account's: see the docstring)."""
    key = _key(scope, username, ip)
    shared(scope, lambda store: store.delete_many([key, f"{key}:since"]))


def clear_account(username: str, ip: str, scopes: tuple[str, ...]) -> None:
    """The owner proved control of the account (a password reset): its own counters end in `scopes`,
    and the pair of the address the reset came from."""
    keys = [_account_key(scope, username) for scope in scopes] + [
        _key(scope, username, ip) for scope in scopes
    ]
    names = [name for key in keys for name in (key, f"{key}:since")]
    shared("password-reset", lambda store: store.delete_many(names))


def allow(scope: str, ident: str, limit: int, seconds: int) -> bool:
    """Count one event for `ident` (an e-mail, an address) in `scope`; False once the window since its
    first event holds more than `limit`. For budgets of mail and sign-ups, not for secrets."""
    key = f"dashboard:{scope}:{_hash(ident.strip().lower())}"
    return shared(scope, lambda store: _record(store, key, seconds)) <= limit


def mail_allowed(email: str) -> bool:
    """One more account mail (sign-up link, sign-up attempt, password reset) to `email` fits its budget:
    DASHBOARD_MAIL_ADDRESS_LIMIT per DASHBOARD_MAIL_WINDOW_SECONDS, counted whether or not the address
    has an account, so the budget tells nothing about it."""
    limit, seconds = int(settings.DASHBOARD_MAIL_ADDRESS_LIMIT), int(settings.DASHBOARD_MAIL_WINDOW_SECONDS)
    return allow("account-mail", email, limit, seconds)


def client_allowed(scope: str, request: HttpRequest, limit: int) -> bool:
    """One more `scope` request (a sign-up, a reset request) from the client's address fits `limit` per
    DASHBOARD_MAIL_WINDOW_SECONDS."""
    return allow(f"{scope}-ip", client_ip(request), limit, int(settings.DASHBOARD_MAIL_WINDOW_SECONDS))


def count(key: str, seconds: int, *, store: BaseCache = cache, by: int = 1) -> int:
    """`by` more in `key`'s counter in the shared cache, created at `by` to expire after `seconds`; the new
    count. Atomic across processes, whatever the count: on Redis one script (one round trip), elsewhere
    add, then incr."""
    if store is cache:
        # The `cache` proxy (also DRF's throttle cache) is no RedisCache itself: the backend behind it is.
        store = caches[DEFAULT_CACHE_ALIAS]
    if isinstance(store, RedisCache):
        full_key = store.make_and_validate_key(key)
        client = store._cache.get_client(full_key, write=True)
        return int(client.register_script(_COUNT_SCRIPT)(keys=[full_key], args=[seconds, by]))
    if store.add(key, by, timeout=seconds):
        return by
    try:
        return int(store.incr(key, by))
    except ValueError:  # expired between add and incr: this one opens it again
        store.set(key, by, timeout=seconds)
        return by


# INCRBY creates a missing counter at the amount; only then is its expiry set, in the same atomic step, so
# a counter never lives without one. The value stays a plain integer, as the cache's `add` and `get` read it.
_COUNT_SCRIPT = """
local count = redis.call('INCRBY', KEYS[1], ARGV[2])
if count == tonumber(ARGV[2]) then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return count
"""

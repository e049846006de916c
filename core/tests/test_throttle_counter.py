"""The shared counter behind the public invoice limit and the login lock (`throttle.count`):
one count per call across processes, the expiry set when the counter is created and never pushed later, on
Redis (one script per call) and on the local-memory cache of `make run`."""

from __future__ import annotations

import uuid

import pytest
from django.conf import settings
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache

from core.throttle import count


def _redis_cache() -> RedisCache:
    # A store of its own per test (as each web process builds its own), sharing the one Redis.
    return RedisCache(settings.REDIS_URL, {"KEY_PREFIX": "kassa-test"})


@pytest.mark.redis
def test_redis_counts_across_stores_and_expires_from_the_first_count():
    first, second = _redis_cache(), _redis_cache()
    key = f"count-{uuid.uuid4().hex}"

    counts = [count(key, 60, store=first), count(key, 60, store=second), count(key, 600, store=first)]

    assert counts == [1, 2, 3]
    assert first.get(key) == 3  # a plain integer the cache itself reads
    client = first._cache.get_client(key)
    ttl = client.ttl(first.make_and_validate_key(key))
    assert 0 < ttl <= 60  # set by the first count; the third (600 s) did not extend it


@pytest.mark.redis
def test_redis_opens_a_new_window_once_the_counter_expired():
    store = _redis_cache()
    key = f"count-{uuid.uuid4().hex}"
    count(key, 60, store=store)
    count(key, 60, store=store)
    store.delete(key)  # what the expiry does

    assert count(key, 60, store=store) == 1
    assert store._cache.get_client(key).ttl(store.make_and_validate_key(key)) > 0


def test_local_memory_counts_and_reopens():
    store = LocMemCache(f"count-{uuid.uuid4().hex}", {})

    assert [count("k", 60, store=store) for _ in range(3)] == [1, 2, 3]
    store.delete("k")
    assert count("k", 60, store=store) == 1


@pytest.mark.redis
def test_the_default_cache_proxy_counts_with_the_script(monkeypatch):
    # `cache` (also DRF's throttle cache) is a proxy, not a RedisCache: it must still take the one-script
    # path, not add-then-incr (two or three round trips, and a window that a crash between them leaves open).
    from django.core.cache import cache

    def refused(*args, **kwargs):
        raise AssertionError("counted with add/incr instead of the script")

    monkeypatch.setattr(RedisCache, "add", refused)
    monkeypatch.setattr(RedisCache, "incr", refused)
    key = f"count-{uuid.uuid4().hex}"

    assert [count(key, 60), count(key, 60, store=cache)] == [1, 2]

"""core.cache.RedisCache: Django's Redis cache with one Redis client per connection pool, reused."""

from __future__ import annotations

import threading

import pytest
from django.conf import settings

from core.cache import RedisCache

pytestmark = pytest.mark.redis


def _cache() -> RedisCache:
    options = {"KEY_PREFIX": "kassa-cache-test", "OPTIONS": {"socket_timeout": 5}}
    return RedisCache(settings.REDIS_URL, options)


def test_one_client_serves_every_call_and_the_cache_works():
    cache = _cache()
    cache.delete("k")

    assert cache.add("k", 1, timeout=30) is True
    assert cache.add("k", 2, timeout=30) is False
    assert cache.get("k") == 1
    assert cache.incr("k") == 2
    assert cache._cache.get_client(write=True) is cache._cache.get_client("k", write=True)
    cache.delete("k")
    assert cache.get("k") is None


def test_threads_share_the_client_safely():
    cache = _cache()
    cache.set("n", 0, timeout=30)
    errors: list[BaseException] = []

    def bump() -> None:
        try:
            for _ in range(100):
                cache.incr("n")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=bump) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert cache.get("n") == 800


def test_the_deployment_uses_it_with_redis():
    from django.core.cache import caches

    assert isinstance(caches["default"], RedisCache)


def test_add_many_adds_each_missing_key_in_one_round_trip(monkeypatch):
    cache = _cache()
    cache.delete_many(["a", "b", "c"])
    cache.add("b", 7, timeout=30)
    client = cache._cache.get_client(write=True)
    sent = []
    monkeypatch.setattr(client, "execute_command", lambda *args, **kw: sent.append(args))  # no single calls

    assert cache.add_many(["a", "b", "c"], 1, timeout=30) == [True, False, True]

    monkeypatch.undo()
    assert sent == []  # all went through the pipeline
    assert [cache.get(key) for key in ("a", "b", "c")] == [1, 7, 1]
    assert 0 < client.ttl(cache.make_key("a")) <= 30
    cache.delete_many(["a", "b", "c"])

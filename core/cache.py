"""Django's Redis cache, keeping one Redis client per connection pool instead of making one per call.

Django's `RedisCacheClient.get_client` builds a new `redis.Redis` around the (shared) connection pool on
every cache call. The client is only a thin object over the pool and safe to share between threads, but
building it costs more than the command it sends: 125 µs of a 330 µs `cache.add` against a local Redis,
where the command itself takes 100 µs. Every request that touches the cache (the public rate limit, the
wake-up after an invoice or a withdrawal, the log-in throttle) paid it.

`add_many` is `add` for several keys in one round trip (a pipeline): a withdrawal wakes two tasks.
"""

from __future__ import annotations

from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


class _ReusingClient(RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        index = self._get_connection_pool_index(write)  # type: ignore[attr-defined]
        client = self._clients.get(index)
        if client is None:
            pool = self._get_connection_pool(write)  # type: ignore[attr-defined]
            client = self._clients[index] = self._client(connection_pool=pool)  # type: ignore[attr-defined]
        return client


class RedisCache(DjangoRedisCache):
    """`django.core.cache.backends.redis.RedisCache`, with `_ReusingClient`."""

    def __init__(self, server: Any, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = _ReusingClient

    def add_many(
        self, keys: list[str], value: Any, timeout: float | None = DEFAULT_TIMEOUT, version: int | None = None
    ) -> list[bool]:
        """`add` of each key (its result, in order), in one round trip to Redis."""
        expiry = self.get_backend_timeout(timeout)
        if len(keys) == 1 or expiry == 0:  # one key; or Django's own meaning of 0 (set, then delete at once)
            return [self.add(key, value, timeout, version) for key in keys]
        stored = self._cache._serializer.dumps(value)  # type: ignore[attr-defined]
        pipe = self._cache.get_client(write=True).pipeline(transaction=False)
        for key in keys:
            made = self.make_and_validate_key(key, version=version)
            pipe.set(made, stored, ex=None if expiry is None else int(expiry), nx=True)
        return [bool(result) for result in pipe.execute()]

"""Wake-up messages for tasks that take their work from the database, one waiting message at a time.

Some tasks carry no work in their message: the webhook dispatcher enqueues every event published since it
last ran, the payout planner plans every accepted withdrawal of its code. One message waiting serves any
number of commits, so `wake_on_commit` publishes one only when none is waiting. A flag in the shared cache
(Redis: SET NX with an expiry) says that one is; the task calls `woken` first, before it reads the database,
which clears the flag. Then:

- a commit that finds the flag set committed before the waiting message's task clears it, and that task
  reads after clearing it: it sees the commit;
- a commit that finds the flag clear publishes a message of its own.

So no committed work is left without a message after it, unless the message itself is lost (a broker that
restarted empty): the flag then expires after `WAKE_TTL_SECONDS`, and the database pollers of beat find the
work, as they find the work of any lost message. A request pays one cache round trip instead of a broker
publish. Where the cache is not shared between processes (the embedded default's local memory), the flag
would be seen by one process only: there (`WAKE_COALESCE` off) every wake publishes.
"""

from __future__ import annotations

import contextlib
import functools
import logging

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from config.tasks import task

logger = logging.getLogger("kassa.publish")


Wake = tuple[str, ...]  # a task's name, then the arguments of its message


def wake_on_commit(name: str, *args: str) -> None:
    """Once the caller's transaction commits (at once in autocommit): make sure a message of the task `name`
    with `args` waits in the broker, publishing one unless one is waiting already."""
    wakes_on_commit((name, *args))


def wakes_on_commit(*wakes: Wake) -> None:
    """`wake_on_commit` for several tasks: one callback, whose flags take one cache round trip."""
    if wakes:
        transaction.on_commit(functools.partial(_wake, wakes))


def woken(name: str, *args: str) -> None:
    """The task's first call, before it reads any work: a commit from now on publishes a message again."""
    if not settings.WAKE_COALESCE:
        return
    try:
        cache.delete(wake_key(name, *args))
    except Exception as exc:  # the cache: the flag expires after WAKE_TTL_SECONDS all the same
        logger.warning("wake-up flag of %s%r not cleared (%s: %s)", name, args, type(exc).__name__, exc)


def wake_key(name: str, *args: str) -> str:
    return ":".join(("wake", name, *args))


def wake_flags_clear() -> None:
    """Forget every wake-up flag, for whoever empties the queues whose messages they stand for (the bench
    between its kinds, the tests between tests). Only a Redis or local-memory cache holds any."""
    from django.core.cache import caches
    from django.core.cache.backends.locmem import LocMemCache
    from django.core.cache.backends.redis import RedisCache

    flags = caches["default"]
    prefix = flags.make_key(wake_key(""))[: -len(":")]  # the stored keys' common start, "...:wake"
    if isinstance(flags, RedisCache):
        client = flags._cache.get_client(write=True)
        for stored in client.scan_iter(match=prefix + ":*"):
            client.delete(stored)
    elif isinstance(flags, LocMemCache):
        unprefixed = len(flags.make_key(""))
        for stored in [key for key in flags._cache if key.startswith(prefix + ":")]:  # type: ignore[attr-defined]
            flags.delete(stored[unprefixed:])


def _wake(wakes: tuple[Wake, ...]) -> None:
    keys = [wake_key(*wake) for wake in wakes]
    for (name, *args), key, waiting in zip(wakes, keys, _flags_set(keys), strict=True):
        if waiting:
            continue  # a message is waiting, and its task reads after this commit
        if not task(name).publish_committed(tuple(args)) and settings.WAKE_COALESCE:
            # So the next commit tries to publish again; if the cache fails too, the flag expires.
            with contextlib.suppress(Exception):
                cache.delete(key)


def _flags_set(keys: list[str]) -> list[bool]:
    """Set each flag that is not set (SET NX with an expiry); True for each that was set already. A cache
    that fails, or none shared: none was, so that every wake publishes."""
    if not settings.WAKE_COALESCE:
        return [False] * len(keys)
    try:
        add_many = getattr(cache, "add_many", None)  # config.cache.RedisCache: one round trip for them all
        if add_many is not None:
            added = add_many(keys, 1, timeout=settings.WAKE_TTL_SECONDS)
        else:
            added = [cache.add(key, 1, timeout=settings.WAKE_TTL_SECONDS) for key in keys]
    except Exception as exc:  # the cache is down: publish, one message too many is harmless
        logger.warning("wake-up flags %s not set (%s: %s)", ", ".join(keys), type(exc).__name__, exc)
        return [False] * len(keys)
    return [not was_added for was_added in added]

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

A web process also coalesces its own wake-ups in time (`coalesce_wakes`, from config.wsgi and config.asgi):
the first after a quiet `WAKE_DEBOUNCE_SECONDS` goes at once, as above; those that follow within the window
wait for its end, when one thread of the process sends them all in one round trip. Each is still sent after
its commit, so the reasoning above holds; a busy worker pays a round trip per window instead of one per
request, and a webhook waits at most the window longer. A process killed outright loses what it held back,
as a lost message: the pollers find the work. A process that exits normally sends it first.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import math
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction

from core.enqueue import TaskRef

logger = logging.getLogger("kassa.publish")


Wake = tuple[str, ...]  # a task's reference (core.enqueue.TaskRef, a str), then its message's arguments


def wake_on_commit(name: TaskRef[Any], *args: str) -> None:
    """Once the caller's transaction commits (at once in autocommit): make sure a message of the task `name`
    with `args` waits in the broker, publishing one unless one is waiting already."""
    wakes_on_commit((name, *args))


def wakes_on_commit(*wakes: Wake) -> None:
    """`wake_on_commit` for several tasks: one callback, whose flags take one cache round trip."""
    if wakes:
        transaction.on_commit(functools.partial(_wake, wakes))


def woken(name: TaskRef[Any], *args: str) -> None:
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
    """The commit callback: send the wake-ups now, or hand them to this process's coalescer."""
    coalescer = _coalescer
    if coalescer is None:
        _send(wakes)
    else:
        coalescer.submit(wakes)


def _send(wakes: tuple[Wake, ...]) -> None:
    keys = [wake_key(*wake) for wake in wakes]
    for (name, *args), key, waiting in zip(wakes, keys, _flags_set(keys), strict=True):
        if waiting:
            continue  # a message is waiting, and its task reads after this commit
        if not current_app.tasks[name].publish_committed(tuple(args)) and settings.WAKE_COALESCE:
            # So the next commit tries to publish again; if the cache fails too, the flag expires.
            with contextlib.suppress(Exception):
                cache.delete(key)


def _flags_set(keys: list[str]) -> list[bool]:
    """Set each flag that is not set (SET NX with an expiry); True for each that was set already. A cache
    that fails, or none shared: none was, so that every wake publishes."""
    if not settings.WAKE_COALESCE:
        return [False] * len(keys)
    try:
        add_many = getattr(cache, "add_many", None)  # core.cache.RedisCache: one round trip for them all
        if add_many is not None:
            added = add_many(keys, 1, timeout=settings.WAKE_TTL_SECONDS)
        else:
            added = [cache.add(key, 1, timeout=settings.WAKE_TTL_SECONDS) for key in keys]
    except Exception as exc:  # the cache is down: publish, one message too many is harmless
        logger.warning("wake-up flags %s not set (%s: %s)", ", ".join(keys), type(exc).__name__, exc)
        return [False] * len(keys)
    return [not was_added for was_added in added]


# --- coalescing in time, per process ------------------------------------------------------------------------

MAX_DEBOUNCE_SECONDS = 1.0  # a webhook may wait this much longer at most; beyond, the pollers are as good


class Coalescer:
    """The wake-ups of one process, sent at most once per `window` seconds: the first of a quiet window at
    once (by the committing thread), the rest at the window's end by a thread of its own, all in one call
    of `send` (one cache round trip), each wake once however many commits asked for it."""

    def __init__(
        self,
        window: float,
        send: Callable[[tuple[Wake, ...]], None],
        *,
        clock: Callable[[], float] = time.monotonic,
        start_thread: bool = True,
    ) -> None:
        self.window = window
        self._send = send
        self._clock = clock
        self._start_thread = start_thread  # tests drive `send_due` themselves
        self._changed = threading.Condition()
        self._held: dict[Wake, None] = {}  # ordered, each wake once
        self._quiet_from = -math.inf  # when the next wake may go at once
        self._thread: threading.Thread | None = None

    def submit(self, wakes: tuple[Wake, ...]) -> None:
        with self._changed:
            now = self._clock()
            if not self._held and now >= self._quiet_from:
                self._quiet_from = now + self.window
                held = False
            else:
                # The thread waits for the first held wake, then for the window's end, which later ones do
                # not move: only the first wakes it (waking it each time costs the request a thread switch).
                first = not self._held
                self._held.update(dict.fromkeys(wakes))
                held = True
                if self._thread is None and self._start_thread:
                    self._thread = threading.Thread(target=self._run, name="kassa-wakeups", daemon=True)
                    self._thread.start()
                if first:
                    self._changed.notify()
        if not held:
            self._send(wakes)

    def send_due(self, *, now_or_never: bool = False) -> bool:
        """Send what is held if its window has ended (or at once, `now_or_never`); whether anything went."""
        with self._changed:
            if not self._held or (not now_or_never and self._clock() < self._quiet_from):
                return False
            wakes = self._take()
        self._send(wakes)
        return True

    def held(self) -> tuple[Wake, ...]:
        with self._changed:
            return tuple(self._held)

    def _take(self) -> tuple[Wake, ...]:
        wakes = tuple(self._held)
        self._held.clear()
        self._quiet_from = self._clock() + self.window
        return wakes

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._held or self._clock() < self._quiet_from:
                    self._changed.wait(max(0.0, self._quiet_from - self._clock()) if self._held else None)
                wakes = self._take()
            try:
                self._send(wakes)  # logs its own failures; anything else must not end the thread
            except Exception:
                logger.exception("wake-ups %r not sent; the pollers will find their work", wakes)


_coalescer: Coalescer | None = None


def coalesce_wakes(window: float) -> None:
    """This process's wake-ups go at most once per `window` seconds (0: each at its commit, as elsewhere).
    Called by config.wsgi and config.asgi with WAKE_DEBOUNCE_SECONDS: web processes only, whose requests
    commit many times a second; workers and commands send each wake at its commit."""
    global _coalescer
    if not (math.isfinite(window) and 0 <= window <= MAX_DEBOUNCE_SECONDS):
        raise ImproperlyConfigured(
            f"WAKE_DEBOUNCE_SECONDS must be between 0 and {MAX_DEBOUNCE_SECONDS:g} seconds, not {window!r}."
        )
    _send_held_now()
    _coalescer = Coalescer(window, _send) if window > 0 else None


def _send_held_now() -> None:
    coalescer = _coalescer
    if coalescer is not None:
        coalescer.send_due(now_or_never=True)


def _forget_in_child() -> None:
    """A forked child has none of the parent's threads, and what the parent held is the parent's to send."""
    global _coalescer
    if _coalescer is not None:
        _coalescer = Coalescer(_coalescer.window, _send)


atexit.register(_send_held_now)  # a worker that exits normally (restarted, stopped) sends what it held
os.register_at_fork(after_in_child=_forget_in_child)

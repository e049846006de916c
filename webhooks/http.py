"""The HTTP client of webhook delivery: the SSRF guard applied at connect time, no proxies, no redirects.

The host is resolved once, every address is vetted (`ssrf.resolve_public_addresses`), and the socket is
opened to a vetted address only, so a DNS answer that changes between check and connect (rebinding)
cannot reach a private address. TLS still verifies the certificate against the host name.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import NewConnectionError

from core import ssrf

logger = logging.getLogger(__name__)

_opened = threading.local()  # sockets opened by this thread's current `deadline()` block


class Watchdog:
    """Calls each scheduled function at its time, from one thread per process: a deadline costs a heap entry,
    not a thread of its own (starting and stopping a `threading.Timer` per webhook cost about 0.15 ms).

    The thread sleeps until the earliest time scheduled, never later than `IDLE_SECONDS` ahead: a new entry
    due after its wake-up needs no signal (it is seen then), so a steady stream of deliveries wakes it about
    once per `IDLE_SECONDS`, not once per delivery. An entry cancelled before its time is dropped when it
    reaches the top of the heap (a delivery cancels its own, which is then the top: dropped at once).
    A forked child (`after_fork`) starts its own thread on first use; the parent's entries are not its own."""

    IDLE_SECONDS = 1.0

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, start_thread: bool = True) -> None:
        self._clock = clock
        self._start_thread = start_thread  # tests drive `due` themselves
        self.after_fork()

    def after_fork(self) -> None:
        """A fresh state: in a forked child the parent's thread is gone and its lock may be held."""
        self._changed = threading.Condition()
        self._heap: list[list[Any]] = []  # [when, order, function or None once cancelled or called]
        self._order = itertools.count()
        self._wake_at = math.inf  # when the waiting thread looks again at the latest (inf: not waiting yet)
        self._thread: threading.Thread | None = None

    def schedule(self, seconds: float, function: Callable[[], None]) -> list[Any]:
        """Call `function` in `seconds`, unless `cancel`led with the returned entry before then."""
        with self._changed:
            entry: list[Any] = [self._clock() + seconds, next(self._order), function]
            heapq.heappush(self._heap, entry)
            if self._thread is None and self._start_thread:
                self._thread = threading.Thread(target=self._run, name="kassa-watchdog", daemon=True)
                self._thread.start()
            elif entry[0] < self._wake_at:
                self._changed.notify()
            return entry

    def cancel(self, entry: list[Any]) -> None:
        with self._changed:
            entry[2] = None
            self._drop_cancelled()

    def _drop_cancelled(self) -> None:
        while self._heap and self._heap[0][2] is None:
            heapq.heappop(self._heap)

    def due(self) -> list[Callable[[], None]]:
        """Take the functions whose time has come (the thread calls them; tests drive it by hand)."""
        with self._changed:
            return self._take_due()

    def _take_due(self) -> list[Callable[[], None]]:
        now, taken = self._clock(), []
        self._drop_cancelled()
        while self._heap and self._heap[0][0] <= now:
            entry = heapq.heappop(self._heap)
            taken.append(entry[2])
            entry[2] = None
            self._drop_cancelled()
        return taken

    def _run(self) -> None:
        while True:
            with self._changed:
                while not (functions := self._take_due()):
                    now = self._clock()
                    first = self._heap[0][0] if self._heap else math.inf
                    self._wake_at = min(first, now + self.IDLE_SECONDS)
                    self._changed.wait(self._wake_at - now)
            for function in functions:
                try:
                    function()
                except Exception:  # a cut that failed must not end the watchdog for every later delivery
                    logger.exception("webhook deadline callback failed")


_watchdog = Watchdog()
os.register_at_fork(after_in_child=_watchdog.after_fork)


@contextmanager
def deadline(seconds: float) -> Iterator[threading.Event]:
    """A hard wall-clock limit on everything inside: DNS, connect, TLS, headers and body.

    Timeouts of requests/urllib3 apply per socket operation, so a receiver that drips one byte every few
    seconds never trips them. At the deadline the watchdog shuts down every socket opened inside the block
    (which wakes a blocked read at once); the yielded event tells the caller that it fired.
    """
    fired = threading.Event()
    sockets: list[socket.socket] = []
    _opened.sockets = sockets

    def cut() -> None:
        fired.set()
        for sock in list(sockets):
            with suppress(OSError):  # already closed
                sock.shutdown(socket.SHUT_RDWR)

    entry = _watchdog.schedule(seconds, cut)
    try:
        yield fired
    finally:
        _watchdog.cancel(entry)
        _opened.sockets = None


class _GuardedConnectionMixin:
    _dns_host: str
    port: int
    sock: socket.socket | None

    def _new_conn(self) -> socket.socket:
        host = self._dns_host
        try:
            vetted = ssrf.resolve_public_addresses(host.rstrip("."), self.port)
        except ssrf.UnsafeWebhookUrl as exc:
            logger.warning("webhook connection to %s:%s refused by the SSRF guard: %s", host, self.port, exc)
            raise NewConnectionError(self, f"refused by the SSRF guard: {exc}") from exc  # type: ignore[arg-type]
        last_error: Exception | None = None
        for _family, _type, _proto, _name, sockaddr in vetted:
            # Point urllib3 at the vetted literal for this one connect; `host` (SNI, Host header) is restored.
            self._dns_host = str(sockaddr[0])
            try:
                sock: socket.socket = super()._new_conn()  # type: ignore[misc]
                registry = getattr(_opened, "sockets", None)
                if registry is not None:
                    registry.append(sock)
                return sock
            except NewConnectionError as exc:
                last_error = exc
            finally:
                self._dns_host = host
        raise last_error or NewConnectionError(self, "no address to connect to")  # type: ignore[arg-type]

    def request(self, *args: Any, **kwargs: Any) -> None:
        # A kept-alive connection opened by an earlier delivery: this block's deadline must cut it as well.
        registry = getattr(_opened, "sockets", None)
        if registry is not None and self.sock is not None:
            registry.append(self.sock)
        super().request(*args, **kwargs)  # type: ignore[misc]


class GuardedHTTPConnection(_GuardedConnectionMixin, HTTPConnection):
    pass


class GuardedHTTPSConnection(_GuardedConnectionMixin, HTTPSConnection):
    pass


class _GuardedHTTPPool(HTTPConnectionPool):
    ConnectionCls = GuardedHTTPConnection


class _GuardedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = GuardedHTTPSConnection


class GuardedAdapter(HTTPAdapter):
    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _GuardedHTTPPool, "https": _GuardedHTTPSPool}
        self.poolmanager.key_fn_by_scheme = dict(self.poolmanager.key_fn_by_scheme)


def guarded_session() -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # an environment proxy would connect on our behalf, past the guard
    adapter = GuardedAdapter(max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


_kept = threading.local()


def delivery_session() -> requests.Session:
    """This thread's guarded session, kept across deliveries: a receiver's connection (vetted by the guard
    when it was opened, to the address it was opened to) is reused by the next POST to the same scheme, host
    and port instead of a new TCP (and TLS) handshake each time. Pools are per thread, so a worker's threads
    never share a connection."""
    session: requests.Session | None = getattr(_kept, "session", None)
    if session is None:
        session = _kept.session = guarded_session()
    return session

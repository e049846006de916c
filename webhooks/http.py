"""The HTTP client of webhook delivery: the SSRF guard applied at connect time, no proxies, no redirects.

The host is resolved once, every address is vetted (`ssrf.resolve_public_addresses`), and the socket is
opened to a vetted address only, so a DNS answer that changes between check and connect (rebinding)
cannot reach a private address. TLS still verifies the certificate against the host name.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import NewConnectionError

from webhooks import ssrf

logger = logging.getLogger(__name__)

_opened = threading.local()  # sockets opened by this thread's current `deadline()` block


@contextmanager
def deadline(seconds: float) -> Iterator[threading.Event]:
    """A hard wall-clock limit on everything inside: DNS, connect, TLS, headers and body.

    Timeouts of requests/urllib3 apply per socket operation, so a receiver that drips one byte every few
    seconds never trips them. At the deadline a watchdog shuts down every socket opened inside the block
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

    watchdog = threading.Timer(seconds, cut)
    watchdog.daemon = True
    watchdog.start()
    try:
        yield fired
    finally:
        watchdog.cancel()
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

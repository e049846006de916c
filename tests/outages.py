"""Parts of the production stack that are down, for the tests of what Kassa does then."""

from __future__ import annotations

import socket
import uuid


def closed_port() -> int:
    """A loopback port nothing listens on: connecting to it is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def redis_caches(url: str) -> dict[str, object]:
    """CACHES with the production Redis cache at `url` (a prefix of its own, short timeouts)."""
    return {
        "default": {
            "BACKEND": "core.cache.RedisCache",
            "LOCATION": url,
            "KEY_PREFIX": f"kassa-test-{uuid.uuid4().hex[:8]}",
            "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
        }
    }


def redis_down_caches() -> dict[str, object]:
    """CACHES whose Redis cannot be reached (no need to stop the real one)."""
    return redis_caches(f"redis://127.0.0.1:{closed_port()}/0")

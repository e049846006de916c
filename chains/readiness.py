"""Can the chain nodes be reached, for /readyz (config/views.py): each real backend's node is asked for
its tip, the cheapest call every backend has.

- The sandbox is part of the database: its codes are ready when the database is, and are not asked.
- Codes scanned together (the EVM tokens of one chain) share one node and one question.
- The questions run in parallel threads and the probe waits at most READYZ_NODE_TIMEOUT_SECONDS for
  them; a node slower than that is reported `timeout`. A question still running is never asked again
  beside itself, so a hanging node holds one thread, not one per probe.
- The answers are kept READYZ_NODE_CACHE_SECONDS per process: a load balancer polling every second asks
  each node once per that time per web process.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for

from django.conf import settings
from django.core.signals import setting_changed

from chains.backend import get_backend
from chains.scanning import scanned_with
from core.assets import all_assets
from core.offer import is_offered, on_sandbox_backend

OK = "ok"
TIMEOUT = "error: timeout"

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_running: dict[str, Future[str]] = {}  # group leader -> its question still in flight
_cached: tuple[float, dict[str, str]] | None = None  # (monotonic time of the answers, code -> answer)


def _clock() -> float:
    """The cache's clock (tests move it)."""
    return time.monotonic()


def node_groups() -> dict[str, list[str]]:
    """The leader of each group of offered codes on a real backend -> the codes that share its node."""
    groups: dict[str, list[str]] = {}
    for asset in all_assets():
        code = asset.code
        if not is_offered(code) or on_sandbox_backend(code):
            continue
        groups.setdefault(scanned_with(code)[0], []).append(code)
    return groups


def nodes_ready() -> dict[str, str]:
    """Payment code -> "ok" or "error: <what>" for every offered code on a real backend (cached)."""
    global _cached
    with _lock:  # one refresh at a time; the others wait for it (bounded by the timeout) and share it
        now = _clock()
        if _cached is not None and now - _cached[0] < settings.READYZ_NODE_CACHE_SECONDS:
            return dict(_cached[1])
        answers = _ask(node_groups())
        _cached = (_clock(), answers)
        return dict(answers)


def forget() -> None:
    """Drop the cached answers (tests, and a change of CHAIN_BACKENDS or CHAIN_NODES)."""
    global _cached
    with _lock:
        _cached = None


def _ask(groups: dict[str, list[str]]) -> dict[str, str]:
    global _pool
    if not groups:
        return {}
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="readyz")
    futures = {}
    for leader in groups:
        running = _running.get(leader)
        if running is None or running.done():
            running = _running[leader] = _pool.submit(_tip, leader)
        futures[leader] = running
    wait_for(futures.values(), timeout=settings.READYZ_NODE_TIMEOUT_SECONDS)
    answers: dict[str, str] = {}
    for leader, codes in groups.items():
        future = futures[leader]
        answer = future.result() if future.done() else TIMEOUT
        answers.update(dict.fromkeys(codes, answer))
    return answers


def _tip(code: str) -> str:
    try:
        get_backend(code).tip(code)
        return OK
    except Exception as exc:  # readiness must report, not raise; the class names it, never a URL
        return f"error: {type(exc).__name__}"


def _reset(*, setting: str, **kwargs: object) -> None:
    if setting in ("CHAIN_BACKENDS", "CHAIN_NODES", "SANDBOX_ENABLED"):
        forget()


setting_changed.connect(_reset)

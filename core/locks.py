"""Locks that die with their holder: one process at a time runs a section (the payout planner of a code),
and a holder that is killed (SIGKILL, OOM, a lost machine) frees it at once, never after a timeout.

- PostgreSQL: a session advisory lock (`pg_try_advisory_lock`) on the holder's database connection. The
  server drops it when that connection ends, which a dead process's does. The connection outlives the
  section (CONN_MAX_AGE), so the lock is unlocked in `finally`; a connection that cannot unlock is closed,
  which frees it as well.
- SQLite (the embedded default, one machine): `flock` on a file under var/locks/, which the kernel frees
  when the process holding it dies.

A cache lease (`cache.add` with a timeout) does neither: the lease of a killed holder blocks everyone
until it expires.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connections

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def held(name: str, *, using: str = "default") -> Iterator[bool]:
    """Try to take the lock `name` without waiting: yields True while this process holds it, False when
    another holder has it (the caller skips its work)."""
    connection = connections[using]
    if connection.vendor == "postgresql":
        with _advisory(name, using) as taken:
            yield taken
    else:
        with _file(name) as taken:
            yield taken


def advisory_key(name: str) -> int:
    """The lock's bigint key: the first 8 bytes of a hash of its name, signed."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big", signed=True)


@contextlib.contextmanager
def _advisory(name: str, using: str) -> Iterator[bool]:
    connection = connections[using]
    key = advisory_key(name)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
        (taken,) = cursor.fetchone()
    if not taken:
        yield False
        return
    try:
        yield True
    finally:
        _advisory_unlock(name, using, key)


def _advisory_unlock(name: str, using: str, key: int) -> None:
    connection = connections[using]
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [key])
    except DatabaseError as exc:
        # A broken connection or an aborted transaction. The lock belongs to the session: ending the
        # session frees it, and the next caller reconnects.
        logger.warning("lock %s: unlock failed (%s), closing the database connection", name, exc)
        with contextlib.suppress(DatabaseError):
            connection.close()


@contextlib.contextmanager
def _file(name: str) -> Iterator[bool]:
    folder = Path(settings.VAR_DIR) / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)

"""What every long-running Kassa process does once it has started: web workers (config.wsgi), Celery
workers (config.celery) and `make bench`, which measures what they run.

Python's cyclic garbage collector runs after every 700 new container objects, and each full collection
walks every object the process holds: Django, the apps, their modules and caches, all of which live as long
as the process. A batch that builds thousands of rows (a chain scan, a bulk withdrawal, the expiry sweep)
paid a fifth of its time in collections (a sampling profile of a 5,000-transfer scan:
docs/benchmarks.md). So, once started:

- what start-up allocated is frozen (`gc.freeze`): moved to a generation the collector never walks;
- young objects are collected after 10,000 allocations instead of 700, and the older generations less often
  too. Reference counting still frees almost everything at once; the collector only finds cycles, which
  Kassa's code does not make in bulk, so memory grows by at most a few batches' worth of cycles in between.
"""

from __future__ import annotations

import gc
import importlib
import logging
import sys

GC_THRESHOLDS = (10_000, 50, 100)
# CPython's own default: deep enough for Django, DRF and Kassa, shallow enough for any thread's C stack.
RECURSION_LIMIT = 1000
# Importing these raises the interpreter's recursion limit for the whole process (py_ecc, which web3 and
# eth-account import, to 100,000): a recursion in C code (a JSON parser, a regex) then overflows the C stack
# and kills the process with SIGSEGV before Python could raise RecursionError.
RAISE_THE_LIMIT_ON_IMPORT = ("web3", "py_ecc")

logger = logging.getLogger(__name__)


def settle_gc() -> None:
    """Freeze what start-up allocated and collect less often (see the module's docstring). Idempotent."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def pin_recursion_limit() -> None:
    """Import what raises the recursion limit now (so nothing raises it later, unseen), then set it back
    to RECURSION_LIMIT, with a log line (INFO) naming what had changed it. Called by the chains app once
    every app is loaded, so every process (web, worker, beat, manage.py) runs with the default limit.
    Idempotent."""
    for name in RAISE_THE_LIMIT_ON_IMPORT:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
    found = sys.getrecursionlimit()
    if found != RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
        logger.info(
            "the recursion limit was %s (raised by an import of %s); set back to %s",
            found,
            " or ".join(RAISE_THE_LIMIT_ON_IMPORT),
            RECURSION_LIMIT,
        )

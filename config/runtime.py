"""What every long-running Kassa process does once it has started: web workers (config.wsgi), Celery
workers (config.celery) and `make bench`, which measures what they run.

Python's cyclic garbage collector runs after every 700 new container objects, and each full collection
walks every object the process holds: Django, the apps, their modules and caches, all of which live as long
as the process. A batch that builds thousands of rows (a chain scan, a bulk withdrawal, the expiry sweep)
paid a fifth of its time in collections (a sampling profile of a 5,000-transfer scan:
docs/operations.md#benchmarks). So, once started:

- what start-up allocated is frozen (`gc.freeze`): moved to a generation the collector never walks;
- young objects are collected after 10,000 allocations instead of 700, and the older generations less often
  too. Reference counting still frees almost everything at once; the collector only finds cycles, which
  Kassa's code does not make in bulk, so memory grows by at most a few batches' worth of cycles in between.
"""

from __future__ import annotations

import gc

GC_THRESHOLDS = (10_000, 50, 100)


def settle_gc() -> None:
    """Freeze what start-up allocated and collect less often (see the module's docstring). Idempotent."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)

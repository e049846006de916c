"""core.runtime.settle_gc: every long-running process freezes what start-up allocated and collects less
often. Checked in fresh interpreters, as each process starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.runtime import GC_THRESHOLDS

BASE_DIR = Path(__file__).resolve().parent.parent
PROBE = "import gc; print(gc.get_freeze_count() > 1000, gc.get_threshold())"


def _run(code: str) -> str:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "start_up",
    [
        "import config.wsgi",  # what gunicorn loads in each worker
        "import config.asgi",
        # A Celery pool process, once forked.
        "import django; django.setup(); from celery.signals import worker_process_init; "
        "import config.celery; worker_process_init.send(sender=None)",
    ],
    ids=["web worker", "asgi worker", "celery worker"],
)
def test_each_process_settles_the_collector_after_start_up(start_up):
    assert _run(f"{start_up}; {PROBE}") == f"True {GC_THRESHOLDS}"


def test_a_plain_interpreter_is_untouched():
    assert _run(PROBE) != f"True {GC_THRESHOLDS}"  # the check above can fail


def test_psycopg_still_has_the_limit_config_statements_raises():
    """core.statements sets a module constant of psycopg's: an upgrade that renames it must fail here, not
    leave every long statement uncached without a word."""
    import psycopg._queries

    from core.statements import MAX_CACHED_PARAMS

    assert psycopg._queries.MAX_CACHED_STATEMENT_PARAMS == MAX_CACHED_PARAMS  # raised at start-up
    assert psycopg._queries.MAX_CACHED_STATEMENT_LENGTH == 4096  # the length limit is psycopg's own


@pytest.mark.parametrize(
    "start_up",
    [
        "import config.wsgi",
        "import config.asgi",
        "import django; django.setup(); import config.celery",
        # manage.py, and anything that imports the EVM backend's libraries after start-up.
        "import django; django.setup(); import web3, eth_account, py_ecc",
    ],
    ids=["web worker", "asgi worker", "celery worker", "late import"],
)
def test_no_import_leaves_the_recursion_limit_raised(start_up):
    """web3 pulls in py_ecc, which raises the limit to 100,000: deep recursion in C code (a parser) would
    then overflow the C stack and kill the process (SIGSEGV) before Python raised RecursionError."""
    assert _run(f"import sys; {start_up}; print(sys.getrecursionlimit())") == "1000"

"""`python -m tools.bench`: set up, start gunicorn, run every kind, print one table, exit 1 on errors."""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

from tools.bench.cleanup import clean_earlier_runs
from tools.bench.core import BENCHMARKS, BenchContext, Benchmark, Result, WrkSettings
from tools.bench.endpoints import ENDPOINTS
from tools.bench.server import (
    ServerError,
    create_merchant,
    gunicorn,
    prepare_database,
    settle_database,
    setup_django,
    worker_count,
)
from tools.bench.targets import judge
from tools.bench.wrk import WrkError, ensure_wrk


def main() -> int:
    """Run the whole bench. Exit status: 0 all clean and every target met, 1 some measurement had errors,
    2 could not run, 3 a row missed its target."""
    # SIGTERM (CI timeout, `kill`) must unwind through the finally blocks that stop gunicorn.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        return _run()
    except (WrkError, ServerError, BenchUsageError) as exc:
        print(f"\nBENCH FAILED: {exc}", file=sys.stderr)
        return 2


def _run() -> int:
    settings = _wrk_settings()
    # Before anything is started, so a machine without wrk (and without root) stops here, cleanly.
    wrk_path = ensure_wrk()
    setup_django()
    process_log = _log_to_file()
    # Registers the kinds, after Django is configured: the in-process ones, then the worker processes.
    import tools.bench.benchmarks
    import tools.bench.flows
    import tools.bench.latency
    import tools.bench.workers  # noqa: F401

    kinds = _selected()

    database = prepare_database()
    # What earlier runs left (their merchants' rows, unconsumed broker messages) would make this run slower
    # than the last one for no reason of its own: removed first, so two runs in a row compare.
    clean_earlier_runs()
    company_id, token = create_merchant()
    workers, why = worker_count(database.vendor)
    _print_environment(database.description, workers, why, settings, wrk_path)

    with tempfile.TemporaryDirectory(prefix="kassa-bench-") as workdir:
        log_path = Path(workdir) / "gunicorn.log"
        with log_path.open("w") as log, gunicorn(workers=workers, log=log) as base_url:
            ctx = BenchContext(
                base_url=base_url, token=token, company_id=company_id, wrk=settings, workdir=workdir
            )
            results: list[Result] = []
            for kind in kinds:
                settle_database()
                results += kind(ctx)
        judge(results, http_rows={endpoint.name for endpoint in ENDPOINTS}, connections=settings.connections)
        print(_table(results))
        print(f"\nwritten to {_save(results, database.description, workers, settings)}")
        missed = [r for r in results if r.met is False]
        print(_verdict(results, missed))
        print(f"this process's log (JSON, as production writes it): {process_log}")
        failed = [r for r in results if r.failures]
        if not failed:
            return 3 if missed else 0
        print("\nFAILED: these measurements had errors, so their numbers do not count:")
        for result in failed:
            for failure in result.failures:
                print(f"  {result.name}: {failure}")
        server_log = log_path.read_text(errors="replace").strip()
        if server_log:
            print("\ngunicorn log (last 40 lines):")
            print("\n".join(server_log.splitlines()[-40:]))
        return 1


def _log_to_file() -> Path:
    """The bench process logs as production does (JSON at INFO, tools.bench.settings), into a file as a
    service's lines go to the journal: the in-process kinds pay for their log lines, the terminal shows the
    table."""
    import logging

    from django.conf import settings as django_settings

    folder = Path(django_settings.VAR_DIR) / "bench"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "bench-process.log"
    stream = path.open("w")  # open for the life of the process, as a service's stderr is
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
            handler.setStream(stream)
    return path


def _selected() -> list[Benchmark]:
    """Every kind, or those `BENCH_ONLY` names (comma-separated function names, e.g. deposit_ingestion)."""
    only = {name.strip() for name in os.environ.get("BENCH_ONLY", "").split(",") if name.strip()}
    unknown = only - {kind.__name__ for kind in BENCHMARKS}
    if unknown:
        known = ", ".join(kind.__name__ for kind in BENCHMARKS)
        raise BenchUsageError(f"BENCH_ONLY names no benchmark: {', '.join(sorted(unknown))} (known: {known})")
    return [kind for kind in BENCHMARKS if not only or kind.__name__ in only]


def _wrk_settings() -> WrkSettings:
    """wrk's settings: 32 connections, or `BENCH_CONNECTIONS` (a whole number from 1 to 1,000): with 1, no
    request waits behind another, so the HTTP rows show what one request costs, not a queue's length."""
    raw = os.environ.get("BENCH_CONNECTIONS", "").strip()
    if not raw:
        return WrkSettings()
    if not raw.isdecimal() or not 1 <= int(raw) <= 1000:
        raise BenchUsageError(f"BENCH_CONNECTIONS must be a whole number from 1 to 1000, not {raw!r}.")
    connections = int(raw)
    # wrk refuses fewer connections than threads.
    return WrkSettings(threads=min(WrkSettings.threads, connections), connections=connections)


class BenchUsageError(Exception):
    pass


def _print_environment(database: str, workers: int, why: str, settings: WrkSettings, wrk_path: str) -> None:
    import django
    import gunicorn as gunicorn_package

    version = subprocess.run(  # noqa: S603 - our own wrk binary, fixed arguments
        [wrk_path, "--version"], capture_output=True, text=True, check=False
    ).stdout.splitlines()
    lines = [
        "Kassa bench",
        f"  database  {database}",
        f"  gunicorn  {gunicorn_package.__version__}, {workers} sync workers on 127.0.0.1 ({why})",
        f"  wrk       {settings.describe()}",
        f"            {version[0].split(' Copyright')[0] if version else wrk_path}",
        f"  host      {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"Django {django.get_version()}",
        "",
    ]
    print("\n".join(lines), flush=True)


def _table(results: list[Result]) -> str:
    width = max([len("name"), *(len(r.name) for r in results)])
    target_width = max([len("target"), *(len(r.target) for r in results)])
    header = (
        f"{'name':<{width}}  {'requests/s':>10}  {'p50 ms':>8}  {'p99 ms':>8}  {'ratio':>6}  {'p50 x':>6}"
        f"  {'p99 x':>6}  {'target':<{target_width}}  {'met':<4}  baseline"
    )
    rows = [header, "-" * len(header)]
    for r in results:
        mark = "  FAILED" if r.failures else ""
        rows.append(
            f"{r.name:<{width}}  {_num(r.requests_per_s, 10, 1)}  {_num(r.p50_ms, 8, 2)}"
            f"  {_num(r.p99_ms, 8, 2)}  {_num(r.ratio, 6, 2)}  {_num(r.p50_ratio, 6, 2)}"
            f"  {_num(r.p99_ratio, 6, 2)}  {r.target:<{target_width}}  {_met(r):<4}  {r.baseline}{mark}"
        )
    return "\n".join(rows)


def _met(result: Result) -> str:
    return {True: "yes", False: "NO", None: "-" if result.target else ""}[result.met]


def _verdict(results: list[Result], missed: list[Result]) -> str:
    judged = [r for r in results if r.met is not None]
    unjudged = [r for r in results if r.target and r.met is None]
    lines = [f"\ntargets: {len(judged) - len(missed)} of {len(judged)} met"]
    lines += [f"  missed: {r.name}: {r.target}" for r in missed]
    lines += [f"  not judged (no trustworthy number): {r.name}" for r in unjudged]
    return "\n".join(lines)


def _save(results: list[Result], database: str, workers: int, settings: WrkSettings) -> Path:
    """The run as JSON under var/bench/ (one file per run, named by its UTC time), to compare two runs."""
    from django.conf import settings as django_settings

    when = datetime.now(UTC)
    folder = Path(django_settings.VAR_DIR) / "bench"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{when.strftime('%Y%m%dT%H%M%SZ')}.json"
    run = {
        "at": when.isoformat(),
        "database": database,
        "gunicornWorkers": workers,
        "wrk": settings.describe(),
        "cpus": os.cpu_count(),
        "results": [asdict(result) for result in results],
    }
    path.write_text(json.dumps(run, indent=1) + "\n")
    return path


def _num(value: float | None, width: int, decimals: int) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.{decimals}f}"


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)

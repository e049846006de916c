"""What every benchmark kind shares: the run's context, one result row, and the registry of kinds.

A kind is a function `(BenchContext) -> list[Result]`, registered with `@benchmark`. The HTTP kind drives
the endpoints of `tools/bench/endpoints.py` with wrk; a later kind (say, a service call in a loop against a
baseline loop) is one more decorated function in `benchmarks.py`, and its rows join the same table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class WrkSettings:
    threads: int = 2
    connections: int = 32
    duration_s: int = 5
    warmup_s: int = 1
    # wrk's default (2 s) would count a request stuck behind a slow one as an error rather than latency.
    timeout_s: int = 10

    def describe(self) -> str:
        return (
            f"{self.threads} threads, {self.connections} connections, {self.duration_s}s per endpoint "
            f"after a {self.warmup_s}s warm-up, --latency, --timeout {self.timeout_s}s"
        )


@dataclass(frozen=True)
class BenchContext:
    """Everything a kind may use: the running service and a merchant's credentials."""

    base_url: str  # gunicorn on loopback, e.g. http://127.0.0.1:41234
    token: str  # the bench merchant's public token, for `Authorization: Bearer`
    company_id: str
    wrk: WrkSettings
    workdir: str  # a temp dir for generated files (wrk Lua scripts), removed after the run


@dataclass
class Result:
    """One line of the table. `ratio` is ops/s over the kind's own baseline, measured in the same run."""

    name: str
    requests_per_s: float | None  # None: not measured (it failed before wrk ran)
    p50_ms: float | None = None
    p99_ms: float | None = None
    ratio: float | None = None
    p99_ratio: float | None = None  # p99 over the baseline's p99 (lower is better; 1.00 = the floor)
    p50_ratio: float | None = (
        None  # p50 over the baseline's p50: one request's cost where none waits (1 conn)
    )
    baseline: str = (
        ""  # the row `ratio` divides by ("" when the kind has one baseline row, given to with_ratios)
    )
    # Non-empty means the numbers are not trustworthy (non-2xx answers, socket errors); the run exits 1.
    failures: list[str] = field(default_factory=list)
    # The row's target as the table prints it (tools/bench/targets.py), and whether this run met it (None: no
    # target, or no trustworthy number to judge).
    target: str = ""
    met: bool | None = None


Benchmark = Callable[[BenchContext], list[Result]]
BENCHMARKS: list[Benchmark] = []


def benchmark(func: Benchmark) -> Benchmark:
    """Register a benchmark kind; kinds run in registration order and print in one table."""
    BENCHMARKS.append(func)
    return func


def with_ratios(results: list[Result], *, baseline: str) -> list[Result]:
    """Fill `ratio` (ops/s over the baseline's), `p99_ratio` and `p50_ratio` (p99, p50 over the baseline's)
    of each row, the baseline being the row the result names, else the row named `baseline` (which gets
    1.00). A row whose ratio its kind worked out already (from runs paired with the baseline's) keeps it;
    every row on a failed baseline loses its ratios."""
    rows = {r.name: r for r in results}
    for result in results:
        result.baseline = result.baseline or baseline
        base = rows.get(result.baseline)
        if base is None or base.failures or not base.requests_per_s:
            # No trustworthy baseline: leave the ratios empty rather than divide by a bad number.
            result.ratio = result.p99_ratio = result.p50_ratio = None
            continue
        if result.ratio is not None:
            continue  # worked out by its kind from paired runs
        if result.requests_per_s is not None and not result.failures:
            result.ratio = result.requests_per_s / base.requests_per_s
            if result.p99_ms is not None and base.p99_ms:
                result.p99_ratio = result.p99_ms / base.p99_ms
            if result.p50_ms is not None and base.p50_ms:
                result.p50_ratio = result.p50_ms / base.p50_ms
    return results

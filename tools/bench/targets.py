"""The targets `make bench` judges its rows by, printed beside them (docs/benchmarks.md).

A target names the rows it applies to by the start of their name and says what must hold: a ratio to the
row's baseline at or above a floor, a rate at or above a floor (a duration at most a ceiling, said as the
rate it implies), or, for the HTTP rows measured under a full queue, a p99 at most twice the row's own p50
(no stalls, lock convoys or collector pauses: under a closed loop of 32 connections every request waits in
the same queue, so a p99 far above the p50 is a request that stopped, not a long queue). A row no target
names is shown without one; the rows at one connection are reported, not judged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tools.bench.core import Result

# At or above this many connections the HTTP rows run with a full queue, and their p99 is judged by their p50.
SATURATED_CONNECTIONS = 32
P99_OVER_P50 = 2.0


@dataclass(frozen=True)
class Target:
    prefix: str  # the rows whose name starts with this (the HTTP rows: whose name is this)
    text: str  # as the table shows it
    holds: Callable[[Result], bool | None]  # None: nothing trustworthy to judge
    exact: bool = False

    def names(self, row: str) -> bool:
        return row == self.prefix if self.exact else row.startswith(self.prefix)


def _ratio_at_least(floor: float) -> Callable[[Result], bool | None]:
    return lambda r: None if r.ratio is None else round(r.ratio, 2) >= floor


def _rate_at_least(floor: float) -> Callable[[Result], bool | None]:
    return lambda r: None if r.requests_per_s is None else r.requests_per_s >= floor


TARGETS: tuple[Target, ...] = (
    Target("PUT webhook-url", "ratio >= 0.70", _ratio_at_least(0.70), exact=True),
    Target("POST invoice", "ratio >= 0.70", _ratio_at_least(0.70), exact=True),
    Target("GET invoice (public)", "ratio >= 0.80", _ratio_at_least(0.80), exact=True),
    Target("POST withdraw (1 item)", "ratio >= 0.50", _ratio_at_least(0.50), exact=True),
    Target("webhook deliveries", "ratio >= 0.50", _ratio_at_least(0.50), exact=True),
    Target("deposit ingest", ">= 2,000 transfers/s", _rate_at_least(2000)),
    Target("expiry sweep", "<= 10 s (>= 10,000/s)", _rate_at_least(10_000)),
    Target("bulk withdraw", "<= 0.4 s (>= 2,500 items/s)", _rate_at_least(2500)),
)
# Commit to delivery of a webhook: a p99 of at most 2 s idle, 5 s under the HTTP load (latency.py).
LATENCY_PREFIX = "webhook commit to delivery, "
LATENCY_TARGETS_S = {"idle": 2.0, "under load": 5.0}
# The second worker process must add most of a worker's rate on two cores (1.0 = no gain, 2.0 = all).
WORKERS_ROW = "webhook deliveries, 2 worker processes"
WORKERS_FLOOR = 1.5
# The scale rows: a merchant with a million rows answers as fast as a small one, within a fifth; the rows
# that show what does grow (an `offset=` page, a `count`) are reported, not judged.
SCALE_MARK = ", 1M rows"
SCALE_FLOOR = 0.80
SCALE_REPORTED = ("offset", "count")


def judge(results: list[Result], *, http_rows: set[str], connections: int) -> list[Result]:
    """Set each row's `target` and `met`. `http_rows` are the names of the HTTP rows wrk measured with
    `connections` connections: with a full queue, their p99 is judged against their own p50 too."""
    for result in results:
        parts: list[tuple[str, bool | None]] = []
        target = next((t for t in TARGETS if t.names(result.name)), None)
        phase = result.name.removeprefix(LATENCY_PREFIX)
        if result.name.startswith(LATENCY_PREFIX) and phase in LATENCY_TARGETS_S:
            ceiling = LATENCY_TARGETS_S[phase]
            held = None if result.p99_ms is None else result.p99_ms <= ceiling * 1000
            parts.append((f"p99 <= {ceiling:g} s", held))
        elif result.name == WORKERS_ROW:
            parts.append((f"{WORKERS_FLOOR:.1f}x of 1 process", _ratio_at_least(WORKERS_FLOOR)(result)))
        elif target is not None and target.text:
            parts.append((target.text, target.holds(result)))
        elif SCALE_MARK in result.name and not any(word in result.name for word in SCALE_REPORTED):
            parts.append((f"ratio >= {SCALE_FLOOR:.2f}", _ratio_at_least(SCALE_FLOOR)(result)))
        if result.name in http_rows and connections >= SATURATED_CONNECTIONS:
            steady = (
                None
                if result.p50_ms is None or result.p99_ms is None
                else result.p99_ms <= P99_OVER_P50 * result.p50_ms
            )
            parts.append((f"p99 <= {P99_OVER_P50:.0f}x p50", steady))
        if not parts or result.failures:
            result.target, result.met = ", ".join(text for text, _ in parts), None
            continue
        result.target = ", ".join(text for text, _ in parts)
        verdicts = [held for _, held in parts]
        result.met = None if None in verdicts else all(verdicts)
    return results

"""`make bench`'s webhook latency rows: commit to first arrival, its p50 and p99, and the targets checked."""

from __future__ import annotations

import pytest

from tools.bench.latency import IDLE, LOADED, latency_result
from tools.bench.targets import judge


def _latencies(seconds: list[float]) -> tuple[dict[str, float], dict[str, float]]:
    committed = {f"e{index}": 1000.0 + index for index in range(len(seconds))}
    arrived = {key: committed[key] + latency for key, latency in zip(committed, seconds, strict=True)}
    return committed, arrived


def test_the_row_shows_the_p50_and_p99_of_commit_to_arrival_and_meets_its_target():
    committed, arrived = _latencies([0.1] * 98 + [0.5, 1.9])

    row = latency_result(IDLE, committed, arrived)

    assert row.name == "webhook commit to delivery, idle"
    assert (row.p50_ms, row.p99_ms) == pytest.approx((100.0, 1900.0))
    assert row.requests_per_s == pytest.approx(100 / (99 + 1.9))  # delivered over the phase's span
    assert row.failures == []


@pytest.mark.parametrize(
    ("phase", "p99", "over"), [(IDLE, 2.5, True), (LOADED, 2.5, False), (LOADED, 6, True)]
)
def test_a_p99_over_the_phases_target_misses_the_rows_target(phase, p99, over):
    committed, arrived = _latencies([0.2] * 98 + [p99, p99])

    (row,) = judge([latency_result(phase, committed, arrived)], http_rows=set(), connections=32)

    assert row.failures == []
    assert row.met is not over
    assert row.target == ("p99 <= 2 s" if phase == IDLE else "p99 <= 5 s")
    assert row.p99_ms == pytest.approx(p99 * 1000)


def test_a_webhook_that_never_arrived_fails_the_row():
    committed, arrived = _latencies([0.1, 0.2, 0.3])
    del arrived["e1"]

    row = latency_result(LOADED, committed, arrived)

    assert row.failures == ["1 of 3 webhooks not received within 60 s"]
    assert row.p50_ms == pytest.approx(300.0)

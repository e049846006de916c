"""`make bench` ratios: each row divided by its own baseline (writes by the insert, reads by the read)."""

from __future__ import annotations

from tools.bench.core import Result, with_ratios


def test_each_row_is_divided_by_its_own_baseline_and_a_bad_baseline_gives_no_ratio():
    rows = with_ratios(
        [
            Result("baseline insert", 800.0, p99_ms=40.0),
            Result("baseline read", 1000.0, p99_ms=20.0, baseline="baseline read"),
            Result("POST invoice", 400.0, p99_ms=60.0),
            Result("GET invoice", 900.0, p99_ms=30.0, baseline="baseline read"),
            Result("broken baseline", 10.0, failures=["non-2xx"]),
            Result("on a broken baseline", 5.0, p99_ms=1.0, baseline="broken baseline"),
        ],
        baseline="baseline insert",
    )
    by_name = {row.name: row for row in rows}
    assert (by_name["POST invoice"].ratio, by_name["POST invoice"].p99_ratio) == (0.5, 1.5)
    assert (by_name["GET invoice"].ratio, by_name["GET invoice"].p99_ratio) == (0.9, 1.5)
    assert by_name["baseline read"].ratio == 1.0
    assert by_name["on a broken baseline"].ratio is None and by_name["on a broken baseline"].p99_ratio is None


def test_a_ratio_worked_out_from_paired_runs_is_kept_unless_its_baseline_failed():
    rows = with_ratios(
        [
            Result("baseline insert", 800.0, p99_ms=40.0),
            # Paired runs: the medians of each run's ratio to the baseline run just before it, which need not
            # equal the ratio of the medians (400 / 800).
            Result("POST invoice", 400.0, p99_ms=60.0, ratio=0.55, p99_ratio=1.4),
            Result("broken baseline", 10.0, failures=["non-2xx"]),
            Result("paired on a broken baseline", 5.0, ratio=0.5, p99_ratio=1.0, baseline="broken baseline"),
        ],
        baseline="baseline insert",
    )
    by_name = {row.name: row for row in rows}
    assert (by_name["POST invoice"].ratio, by_name["POST invoice"].p99_ratio) == (0.55, 1.4)
    assert by_name["baseline insert"].ratio == 1.0
    broken = by_name["paired on a broken baseline"]
    assert broken.ratio is None and broken.p99_ratio is None

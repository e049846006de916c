from __future__ import annotations

import pytest

from bench.core import WrkSettings
from bench.runner import BenchUsageError, _wrk_settings


def test_wrk_runs_32_connections_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCH_CONNECTIONS", raising=False)
    assert _wrk_settings() == WrkSettings()
    assert (WrkSettings().threads, WrkSettings().connections) == (2, 32)


@pytest.mark.parametrize(("value", "threads", "connections"), [("1", 1, 1), (" 8 ", 2, 8), ("1000", 2, 1000)])
def test_bench_connections_sets_the_connections_and_never_more_threads_than_them(
    monkeypatch: pytest.MonkeyPatch, value: str, threads: int, connections: int
) -> None:
    monkeypatch.setenv("BENCH_CONNECTIONS", value)
    settings = _wrk_settings()
    assert (settings.threads, settings.connections) == (threads, connections)
    assert f"{threads} threads, {connections} connections" in settings.describe()


@pytest.mark.parametrize("value", ["0", "-1", "1001", "1.5", "32x", "many"])
def test_a_bench_connections_that_wrk_cannot_run_stops_the_bench_before_it_starts(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("BENCH_CONNECTIONS", value)
    with pytest.raises(BenchUsageError, match="BENCH_CONNECTIONS must be a whole number from 1 to 1000"):
        _wrk_settings()

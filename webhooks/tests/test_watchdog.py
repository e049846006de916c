"""The watchdog behind every delivery's deadline (webhooks.http): one thread per process calls each function
at its time, skips the cancelled ones, and outlives a function that fails. A deadline costs no thread."""

from __future__ import annotations

import threading

from webhooks import http
from webhooks.http import Watchdog, deadline


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_each_function_is_due_at_its_time_in_time_order_and_a_cancelled_one_never():
    clock = Clock()
    watchdog = Watchdog(clock=clock, start_thread=False)
    calls: list[str] = []
    watchdog.schedule(10, lambda: calls.append("late"))
    early = watchdog.schedule(2, lambda: calls.append("cancelled"))
    watchdog.schedule(5, lambda: calls.append("early"))
    watchdog.cancel(early)

    clock.now += 4.9
    assert watchdog.due() == []
    clock.now += 0.1
    for function in watchdog.due():
        function()
    assert calls == ["early"]
    clock.now += 100
    for function in watchdog.due():
        function()
    assert calls == ["early", "late"]
    assert watchdog.due() == []  # each at most once


def test_a_cancelled_entry_at_the_top_leaves_the_heap_at_once():
    watchdog = Watchdog(clock=Clock(), start_thread=False)
    for _ in range(1000):  # a worker's deliveries, one after the other
        watchdog.cancel(watchdog.schedule(10, lambda: None))
    assert watchdog._heap == []


def test_a_fork_leaves_the_child_none_of_the_parents_entries():
    watchdog = Watchdog(clock=Clock(), start_thread=False)
    watchdog.schedule(1, lambda: None)

    watchdog.after_fork()  # what os.register_at_fork calls in the child

    assert watchdog._heap == [] and watchdog._thread is None


def test_the_thread_calls_in_time_and_outlives_a_failing_function():
    watchdog = Watchdog()
    called = threading.Event()

    def fails() -> None:
        raise OSError("socket already gone")

    watchdog.schedule(0.01, fails)
    watchdog.schedule(0.02, called.set)

    assert called.wait(timeout=10)


def test_deadlines_share_one_thread_and_a_cut_still_fires():
    with deadline(10):
        pass
    threads = set(threading.enumerate())
    assert http._watchdog._thread in threads

    for _ in range(200):
        with deadline(10) as fired:
            pass
        assert not fired.is_set()
    with deadline(0.05) as fired:
        assert fired.wait(timeout=10)

    assert set(threading.enumerate()) <= threads  # not one thread more

"""Wake-up messages (core.wakeup): one waiting message for any number of commits, never none after one.

On a bare machine the cache is this process's local memory; in CI it is Redis, shared with every process,
as in production: the same tests run against both."""

from __future__ import annotations

import logging

import pytest
from django.core.cache import cache
from django.db import transaction

from core.wakeup import wake_key, wake_on_commit, wakes_on_commit, woken
from webhooks.services import DISPATCH_TASK as DISPATCH
from webhooks.tests.events import capture_messages
from withdrawals.services import PLAN_TASK as PLAN

pytestmark = pytest.mark.django_db(transaction=True)  # real commits: wake-ups happen after them


def test_one_message_waits_for_any_number_of_commits(monkeypatch):
    sent = capture_messages(monkeypatch)
    for _ in range(3):
        with transaction.atomic():
            wake_on_commit(PLAN, "btc")

    assert sent == [(PLAN, ("btc",))]


def test_each_set_of_arguments_has_its_own_message(monkeypatch):
    sent = capture_messages(monkeypatch)
    for code in ("btc", "ltc", "btc"):
        wake_on_commit(PLAN, code)  # autocommit: at once

    assert sent == [(PLAN, ("btc",)), (PLAN, ("ltc",))]


def test_a_commit_after_the_task_woke_sends_a_new_message(monkeypatch):
    sent = capture_messages(monkeypatch)
    wake_on_commit(PLAN, "btc")
    woken(PLAN, "btc")  # the task starts: what commits from now on may come after its read
    wake_on_commit(PLAN, "btc")
    wake_on_commit(PLAN, "btc")

    assert sent == [(PLAN, ("btc",))] * 2


def test_nothing_is_sent_for_a_rolled_back_transaction(monkeypatch):
    sent = capture_messages(monkeypatch)
    with pytest.raises(RuntimeError), transaction.atomic():
        wake_on_commit(PLAN, "btc")
        raise RuntimeError("the state change failed")

    assert sent == []
    assert cache.get(wake_key(PLAN, "btc")) is None  # and the next commit is not held back


def test_one_commit_wakes_several_tasks_with_one_callback(monkeypatch):
    from django.db import connection

    sent = capture_messages(monkeypatch)
    with transaction.atomic():
        wakes_on_commit((DISPATCH,), (PLAN, "btc"))
        assert len(connection.run_on_commit) == 1
    wakes_on_commit((DISPATCH,), (PLAN, "btc"), (PLAN, "ltc"))  # two are waiting: only the third is sent

    assert sent == [(DISPATCH, ()), (PLAN, ("btc",)), (PLAN, ("ltc",))]
    woken(PLAN, "btc")
    wakes_on_commit((DISPATCH,), (PLAN, "btc"))
    assert sent[3:] == [(PLAN, ("btc",))]


def test_without_a_shared_cache_every_commit_sends(monkeypatch, settings):
    settings.WAKE_COALESCE = False
    sent = capture_messages(monkeypatch)
    wake_on_commit(PLAN, "btc")
    wake_on_commit(PLAN, "btc")

    assert sent == [(PLAN, ("btc",))] * 2
    assert cache.get(wake_key(PLAN, "btc")) is None


def test_a_failed_publish_is_logged_and_the_next_commit_tries_again(monkeypatch, caplog):
    from core.celery_task import KassaTask

    attempts = []

    def refused(self, args=None, kwargs=None, **options):
        attempts.append(args)
        raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(KassaTask, "apply_async", refused)
    with caplog.at_level(logging.WARNING, logger="kassa.publish"):
        wake_on_commit(PLAN, "btc")  # no exception: the work is committed, the pollers will find it
        wake_on_commit(PLAN, "btc")

    assert attempts == [("btc",), ("btc",)]
    assert "broker down" in caplog.text and "poller" in caplog.text


def test_a_cache_that_fails_still_lets_the_message_go(monkeypatch, caplog):
    sent = capture_messages(monkeypatch)

    def down(*args, **kwargs):
        raise ConnectionError("cache down")

    monkeypatch.setattr(cache, "add", down)
    monkeypatch.setattr(cache, "add_many", down, raising=False)  # Redis: several flags in one round trip
    monkeypatch.setattr(cache, "delete", down)
    with caplog.at_level(logging.WARNING, logger="kassa.publish"):
        wake_on_commit(PLAN, "btc")
        woken(PLAN, "btc")  # logged; the flag would expire after WAKE_TTL_SECONDS
        wakes_on_commit((DISPATCH,), (PLAN, "ltc"))

    assert sent == [(PLAN, ("btc",)), (DISPATCH, ()), (PLAN, ("ltc",))]
    assert caplog.text.count("cache down") == 3


@pytest.mark.parametrize(
    ("task_path", "service", "args"),
    [
        (DISPATCH, "webhooks.services.webhook_dispatch", ()),
        (PLAN, "withdrawals.payouts.payout_plan", ("btc",)),
    ],
)
def test_the_woken_tasks_clear_their_flag_before_they_read(monkeypatch, task_path, service, args):
    capture_messages(monkeypatch)
    wake_on_commit(task_path, *args)
    flag_when_read = []
    monkeypatch.setattr(service, lambda *a, **k: flag_when_read.append(cache.get(wake_key(task_path, *args))))

    task_path.task.run(*args)

    assert cache.get(wake_key(task_path, *args)) is None
    assert flag_when_read == [None]


# --- coalescing in time (web processes: config.wsgi, config.asgi) ------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _coalescer(window: float = 0.05):
    from core.wakeup import Coalescer

    calls: list[tuple] = []
    clock = _Clock()
    return Coalescer(window, calls.append, clock=clock, start_thread=False), calls, clock


def test_the_first_wake_of_a_quiet_window_goes_at_once_the_rest_wait_for_its_end():
    coalescer, calls, clock = _coalescer()

    coalescer.submit(((DISPATCH,),))
    coalescer.submit(((DISPATCH,), (PLAN, "btc")))
    coalescer.submit(((DISPATCH,),))
    clock.now += 0.049
    assert not coalescer.send_due()

    assert calls == [((DISPATCH,),)]
    assert coalescer.held() == ((DISPATCH,), (PLAN, "btc"))
    clock.now += 0.001
    assert coalescer.send_due()
    assert calls[1:] == [((DISPATCH,), (PLAN, "btc"))]  # one call, each wake once
    assert coalescer.held() == ()


def test_a_wake_after_a_quiet_window_goes_at_once_again():
    coalescer, calls, clock = _coalescer()
    coalescer.submit(((DISPATCH,),))
    coalescer.submit(((PLAN, "btc"),))
    clock.now += 0.05
    coalescer.send_due()  # the held one went at the window's end: a new window starts there

    clock.now += 0.03
    coalescer.submit(((PLAN, "ltc"),))  # inside the new window: held
    assert calls == [((DISPATCH,),), ((PLAN, "btc"),)]
    clock.now += 0.05
    coalescer.submit(((PLAN, "eth"),))  # one is held already: this one joins it, both go in one call
    assert coalescer.send_due()
    assert calls[2:] == [((PLAN, "ltc"), (PLAN, "eth"))]

    clock.now += 0.06
    coalescer.submit(((DISPATCH,),))
    assert calls[3:] == [((DISPATCH,),)]


def test_held_wakes_go_at_exit_and_a_forked_child_drops_its_parents(monkeypatch):
    from core import wakeup

    coalescer, calls, _ = _coalescer()
    monkeypatch.setattr(wakeup, "_coalescer", coalescer)
    coalescer.submit(((DISPATCH,),))
    coalescer.submit(((PLAN, "btc"),))

    wakeup._forget_in_child()  # the child's coalescer is new: the parent's held wake stays the parent's
    assert wakeup._coalescer is not coalescer and wakeup._coalescer.held() == ()
    assert wakeup._coalescer.window == coalescer.window
    monkeypatch.setattr(wakeup, "_coalescer", coalescer)
    wakeup._send_held_now()  # what atexit runs
    assert calls == [((DISPATCH,),), ((PLAN, "btc"),)]


def test_commits_of_a_web_process_send_their_wakes_through_its_thread(monkeypatch):
    from core import wakeup
    from tests.workers import wait_for

    sent = capture_messages(monkeypatch)
    monkeypatch.setattr(wakeup, "_coalescer", None)
    wakeup.coalesce_wakes(0.05)
    try:
        wake_on_commit(PLAN, "btc")  # the first: at once
        assert sent == [(PLAN, ("btc",))]
        woken(PLAN, "btc")
        wake_on_commit(PLAN, "btc")  # within the window: the thread sends it at its end
        wake_on_commit(PLAN, "ltc")
        assert wait_for(lambda: len(sent) == 3, timeout=10), sent
    finally:
        wakeup.coalesce_wakes(0)
    assert sent[1:] == [(PLAN, ("btc",)), (PLAN, ("ltc",))]
    assert wakeup._coalescer is None


@pytest.mark.parametrize("window", [-0.01, float("nan"), float("inf"), 1.5])
def test_a_window_out_of_range_stops_the_process_with_its_reason(window):
    from django.core.exceptions import ImproperlyConfigured

    from core.wakeup import coalesce_wakes

    with pytest.raises(ImproperlyConfigured, match="WAKE_DEBOUNCE_SECONDS must be between 0 and 1"):
        coalesce_wakes(window)


@pytest.mark.parametrize("entry_point", ["config.wsgi", "config.asgi"])
def test_the_web_entry_points_coalesce_with_the_setting(monkeypatch, settings, entry_point):
    import importlib

    from core import wakeup

    module = importlib.import_module(entry_point)
    monkeypatch.setattr(wakeup, "_coalescer", None)
    settings.WAKE_DEBOUNCE_SECONDS = 0.2
    try:
        importlib.reload(module)
        assert wakeup._coalescer is not None and wakeup._coalescer.window == 0.2
    finally:
        wakeup.coalesce_wakes(0)


def test_a_failing_send_is_logged_and_the_thread_goes_on(caplog):
    from core.wakeup import Coalescer
    from tests.workers import wait_for

    calls: list[tuple] = []

    def send(wakes):
        calls.append(wakes)
        if len(calls) == 2:
            raise RuntimeError("unexpected")

    coalescer = Coalescer(0.01, send)
    with caplog.at_level(logging.ERROR, logger="kassa.publish"):
        coalescer.submit(((DISPATCH,),))  # at once
        coalescer.submit(((PLAN, "btc"),))  # by the thread, which fails
        assert wait_for(lambda: len(calls) == 2, timeout=10)
        coalescer.submit(((PLAN, "ltc"),))  # held or at once: sent either way
        assert wait_for(lambda: len(calls) == 3, timeout=10)

    assert calls[2] == ((PLAN, "ltc"),)
    assert "unexpected" in caplog.text and "pollers" in caplog.text

"""Wake-up messages (config.wakeup): one waiting message for any number of commits, never none after one.

On a bare machine the cache is this process's local memory; in CI it is Redis, shared with every process,
as in production: the same tests run against both."""

from __future__ import annotations

import logging

import pytest
from django.core.cache import cache
from django.db import transaction

from config.wakeup import wake_key, wake_on_commit, wakes_on_commit, woken
from webhooks.tests.events import capture_messages

PLAN = "withdrawals.tasks.payout_plan"
DISPATCH = "webhooks.tasks.webhook_dispatch"
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
    from config.celery_task import KassaTask

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
        ("webhooks.tasks.webhook_dispatch", "webhooks.services.webhook_dispatch", ()),
        ("withdrawals.tasks.payout_plan", "withdrawals.payouts.payout_plan", ("btc",)),
    ],
)
def test_the_woken_tasks_clear_their_flag_before_they_read(monkeypatch, task_path, service, args):
    from config.tasks import task

    capture_messages(monkeypatch)
    wake_on_commit(task_path, *args)
    flag_when_read = []
    monkeypatch.setattr(service, lambda *a, **k: flag_when_read.append(cache.get(wake_key(task_path, *args))))

    task(task_path).run(*args)

    assert cache.get(wake_key(task_path, *args)) is None
    assert flag_when_read == [None]

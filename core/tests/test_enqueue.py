"""Task references (core.enqueue): typed, and checked against the registered tasks when a process starts."""

from __future__ import annotations

import importlib

import pytest
from django.core.exceptions import ImproperlyConfigured

from core import enqueue
from core.enqueue import TaskRef, beat_problems, check_task_refs, task_ref_problems
from tests.imports import project_modules


@pytest.fixture
def declared():
    """References made by a test are forgotten after it (the start-up check reads every one made)."""
    before = list(enqueue._declared)
    yield
    enqueue._declared[:] = before


def test_every_reference_of_the_project_names_a_task_that_takes_its_arguments():
    for module in project_modules():  # every module, so no reference escapes by being imported late
        if not module.endswith((".wsgi", ".asgi", "manage")) and ".management.commands." not in module:
            importlib.import_module(module)
    assert len(enqueue._declared) >= 6
    assert task_ref_problems() == []
    assert beat_problems() == []


def test_a_reference_to_no_task_is_refused(declared):
    ref = TaskRef[[str]]("withdrawals.tasks.payout_plan_typo")
    assert task_ref_problems([ref]) == ["withdrawals.tasks.payout_plan_typo: no such task is registered"]
    with pytest.raises(ImproperlyConfigured, match="payout_plan_typo"):
        check_task_refs()


def test_a_module_that_does_not_exist_is_refused_not_raised(declared):
    ref = TaskRef[[]]("nowhere.tasks.anything")
    assert task_ref_problems([ref]) == ["nowhere.tasks.anything: no such task is registered"]


def test_other_argument_types_are_refused(declared):
    wrong = TaskRef[[int]]("withdrawals.tasks.payout_plan")  # the task takes the code, a str
    (problem,) = task_ref_problems([wrong])
    assert problem.startswith("withdrawals.tasks.payout_plan: declared with (<class 'int'>)")
    assert task_ref_problems([TaskRef[[str, str]]("withdrawals.tasks.payout_plan")]) != []
    assert task_ref_problems([TaskRef[[str]]("withdrawals.tasks.payout_plan")]) == []


def test_a_shaped_reference_is_held_to_the_tasks_defaults_too(declared):
    def other_default(event_id: str, lease_token: str | None = None, waited: int = 1) -> None:
        """Not the task's: its `waited` starts at 0."""

    def same(event_id: str, lease_token: str | None = None, waited: int = 0) -> None:
        """The task's parameters."""

    assert task_ref_problems([TaskRef.shaped("webhooks.tasks.webhook_deliver", same)]) == []
    assert task_ref_problems([TaskRef.shaped("webhooks.tasks.webhook_deliver", other_default)]) != []


def test_a_beat_entry_naming_no_task_is_refused(settings):
    settings.CELERY_BEAT_SCHEDULE = {
        **settings.CELERY_BEAT_SCHEDULE,
        "typo": {"task": "chains.tasks.chain_scan_al", "schedule": 5},
        "arguments": {"task": "withdrawals.tasks.payout_plan", "schedule": 5},
    }
    assert beat_problems() == [
        "beat entry 'arguments': withdrawals.tasks.payout_plan needs 1 arguments",
        "beat entry 'typo': no task chains.tasks.chain_scan_al is registered",
    ]


def test_a_reference_is_the_tasks_name_and_calls_the_registered_task():
    from withdrawals.services import PLAN_TASK

    assert PLAN_TASK == "withdrawals.tasks.payout_plan"
    assert PLAN_TASK.task.name == "withdrawals.tasks.payout_plan"

"""Tasks enqueued by a typed reference, checked at start-up: a service never imports its app's task module
(which imports it), and never names a task by a bare string.

    PLAN_TASK = TaskRef[[str]]("withdrawals.tasks.payout_plan")   # the message: one str, the code
    PLAN_TASK.delay_on_commit(code)                                # mypy checks the arguments
    DELIVER_TASK.with_options(countdown=3).delay_on_commit(event_id, None, 0)

A `TaskRef` is the task's name (a `str`, so it is also the key of its wake-up flag and what a log shows)
with the types of its message's arguments. `check_task_refs`, run when any process starts (CoreConfig.ready)
and by `manage.py check`, loads every app's tasks (and so the services they import, where references are
declared) and refuses a reference whose name no task has, or whose argument types are not the task's
(tests/test_architecture.py imports every module first, so none escapes the check).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import typing
from collections.abc import Callable
from typing import Any, Generic, ParamSpec

from celery import current_app
from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured

P = ParamSpec("P")

_declared: list[TaskRef[Any]] = []


class TaskRef(str, Generic[P]):
    """A registered Celery task by name, with its message's argument types (`TaskRef[[str, int]](name)`)."""

    # typing keeps the subscripted class (`TaskRef[[str, int]]`) in the instance's `__orig_class__`, which the
    # start-up check reads.

    shape: Callable[..., Any] | None = None

    def __new__(cls, name: str) -> TaskRef[P]:
        ref = super().__new__(cls, name)
        _declared.append(ref)
        return ref

    @classmethod
    def shaped(cls, name: str, shape: Callable[P, Any]) -> TaskRef[P]:
        """The reference of a task whose message has optional arguments: `shape` is a function with the
        task's parameters (types and defaults), which mypy and the start-up check hold the calls and the
        task to."""
        ref: TaskRef[P] = cls(name)  # type: ignore[assignment]
        ref.shape = shape
        return ref

    @property
    def task(self) -> Any:
        """The registered task (KassaTask): what the methods below call."""
        return current_app.tasks[str(self)]

    def delay(self, *args: P.args, **kwargs: P.kwargs) -> Any:
        return self.task.delay(*args, **kwargs)

    def delay_on_commit(self, *args: P.args, **kwargs: P.kwargs) -> None:
        """Published once the caller's transaction commits; a failed publish is logged (core.celery_task)."""
        self.task.delay_on_commit(*args, **kwargs)

    def publish_committed(self, *args: P.args, **kwargs: P.kwargs) -> bool:
        """Published now, by a caller whose work committed already: False (logged) if it failed."""
        return bool(self.task.publish_committed(args))

    def with_options(self, **options: Any) -> Sending[P]:
        """The same message with Celery's `apply_async` options (countdown, producer...)."""
        return Sending(self, options)


class Sending(Generic[P]):
    """A TaskRef's message with `apply_async` options."""

    def __init__(self, ref: TaskRef[P], options: dict[str, Any]) -> None:
        self.ref, self.options = ref, options

    def delay(self, *args: P.args, **kwargs: P.kwargs) -> Any:
        return self.ref.task.apply_async(args, kwargs, **self.options)

    def delay_on_commit(self, *args: P.args, **kwargs: P.kwargs) -> None:
        self.ref.task.apply_async_on_commit(args, kwargs, **self.options)


def task_ref_problems(refs: list[TaskRef[Any]] | None = None) -> list[str]:
    """What is wrong with each reference (every one declared so far by default): no such task, or other
    argument types than the task's own parameters (names aside, in order)."""
    problems = []
    for ref in refs if refs is not None else list(_declared):
        name = str(ref)
        with contextlib.suppress(ImportError):  # then no task has the name: said below
            importlib.import_module(name.rpartition(".")[0])  # the module that registers the task
        registry = current_app.tasks
        if name not in registry:
            problems.append(f"{name}: no such task is registered")
            continue
        declared = _declared_types(ref)
        # A bound task's `run` is a bound method, whose signature leaves `self` out already.
        taken = _parameters(registry[name].run, defaults=ref.shape is not None)
        if declared is not None and declared != taken:
            problems.append(f"{name}: declared with {_names(declared)}, the task takes {_names(taken)}")
    return problems


def beat_problems() -> list[str]:
    """Beat's schedule (CELERY_BEAT_SCHEDULE) names tasks by string, as Celery wants it: each must exist and
    take no argument beyond those its entry gives."""
    problems = []
    for entry, spec in sorted(settings.CELERY_BEAT_SCHEDULE.items()):
        name = spec["task"]
        with contextlib.suppress(ImportError):
            importlib.import_module(name.rpartition(".")[0])
        task = current_app.tasks.get(name)
        if task is None:
            problems.append(f"beat entry {entry!r}: no task {name} is registered")
            continue
        required = [
            p
            for p in inspect.signature(task.run).parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        if len(required) > len(spec.get("args", ())):
            problems.append(f"beat entry {entry!r}: {name} needs {len(required)} arguments")
    return problems


def check_task_refs() -> None:
    """Start-up: raise ImproperlyConfigured on any wrong reference declared by the modules loaded so far
    (every tasks module, and the services they import)."""
    problems = task_ref_problems() + beat_problems()
    if problems:
        raise ImproperlyConfigured("Task references that no task matches:\n  " + "\n  ".join(problems))


@checks.register()
def task_refs_check(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """`manage.py check`: the same, with every reference made since start-up."""
    return [checks.Error(problem, id="kassa.E100") for problem in task_ref_problems() + beat_problems()]


def _declared_types(ref: TaskRef[Any]) -> tuple[Any, ...] | None:
    if ref.shape is not None:
        return _parameters(ref.shape, defaults=True)
    alias = getattr(ref, "__orig_class__", None)
    if alias is None:
        return None  # a bare TaskRef(name): nothing declared beyond the name
    (types,) = typing.get_args(alias)
    return tuple(types)


def _parameters(function: Callable[..., Any], *, defaults: bool) -> tuple[Any, ...]:
    """The types of the positional parameters (with their defaults, when asked)."""
    hints = typing.get_type_hints(function)
    parameters = [
        parameter
        for parameter in inspect.signature(function).parameters.values()
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
    ]
    return tuple(
        (hints.get(p.name, Any), p.default) if defaults else hints.get(p.name, Any) for p in parameters
    )


def _names(types: tuple[Any, ...]) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"

"""Services enqueue tasks by name, so a service never imports its app's task module (which imports it).

`task("webhooks.tasks.webhook_deliver")` is the registered task itself (Celery's registry, filled by
autodiscovery when the app is finalized): calling `.delay_on_commit`, `.apply_async` or `.delay` on it is
the same as on the imported function.
"""

from __future__ import annotations

from typing import Any

from celery import current_app


def task(name: str) -> Any:
    """The registered Celery task called `name` (KeyError: a typo or an app whose tasks were not loaded)."""
    return current_app.tasks[name]

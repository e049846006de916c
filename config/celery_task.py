"""The base class of every Kassa task: publishing after a commit never fails the committed work.

`delay_on_commit` runs its publish after the database has committed. If the broker is down at that moment
the work is already done and recorded (a withdrawal held, an invoice created, a webhook in the outbox), and
the database pollers of beat find it and publish it again. So a failed publish is logged, never raised:
raising would turn a committed request into a 500, and a client that retries would get a second
withdrawal.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from celery.contrib.django.task import DjangoTask
from django.db import transaction

logger = logging.getLogger("kassa.publish")


class KassaTask(DjangoTask):  # type: ignore[misc]
    def delay_on_commit(self, *args: Any, **kwargs: Any) -> None:
        transaction.on_commit(functools.partial(self._publish_committed, args, kwargs, {}))

    def apply_async_on_commit(self, args: Any = None, kwargs: Any = None, **options: Any) -> None:  # type: ignore[override]
        transaction.on_commit(functools.partial(self._publish_committed, args or (), kwargs or {}, options))

    def _publish_committed(self, args: Any, kwargs: Any, options: dict[str, Any]) -> None:
        try:
            self.apply_async(args, kwargs, **options)
        except Exception as exc:  # the broker: connection refused, timeout, DNS...
            logger.warning(
                "publish of %s%r failed after commit (%s: %s); the database poller will pick the work up",
                self.name,
                tuple(args),
                type(exc).__name__,
                exc,
            )

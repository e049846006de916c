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
from collections.abc import Callable
from typing import Any

from celery.contrib.django.task import DjangoTask
from django.db import transaction

logger = logging.getLogger("kassa.publish")


class KassaTask(DjangoTask):  # type: ignore[misc]
    def delay_on_commit(self, *args: Any, **kwargs: Any) -> None:
        transaction.on_commit(functools.partial(self._publish_committed, self.delay, args, kwargs))

    def apply_async_on_commit(  # type: ignore[override]
        self, args: Any = None, kwargs: Any = None, **options: Any
    ) -> None:
        publish = functools.partial(self.apply_async, args, kwargs, **options)
        transaction.on_commit(functools.partial(self._publish_committed, publish, (), {}, shown=args))

    def publish_committed(self, args: Any = ()) -> bool:
        """Publish at once, for a caller that runs after its commit already: False (logged) if it failed."""
        return self._publish_committed(self.apply_async, (args,), {}, shown=args)

    def _publish_committed(
        self, publish: Callable[..., Any], args: Any, kwargs: Any, *, shown: Any = None
    ) -> bool:
        try:
            publish(*args, **kwargs)
            return True
        except Exception as exc:  # the broker: connection refused, timeout, DNS...
            logger.warning(
                "publish of %s%r failed after commit (%s: %s); the database poller will pick the work up",
                self.name,
                tuple(shown if shown is not None else args),
                type(exc).__name__,
                exc,
            )
            return False

"""Test helpers shared by the suites whose views need a fresh step-up (security.stepup)."""

from __future__ import annotations

from typing import Any

from security import stepup


def mark_step_up_fresh(client: Any) -> None:
    """Mark the session of Django test `client` (logged in) as just confirmed, as the step-up page does."""
    session = client.session
    session[stepup.SESSION_KEY] = stepup._now()
    session.save()


def forget_step_up(client: Any) -> None:
    session = client.session
    session.pop(stepup.SESSION_KEY, None)
    session.save()

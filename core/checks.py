"""Production refuses to start on an unsafe configuration: the `kassa_deploy` checks, run at start-up.

Each app registers its own deployment checks with `TAG` and `deploy=True`, so `manage.py check --deploy`
runs them, and production settings (`KASSA_STARTUP_CHECKS = True`) run the same checks when any process
starts (web, worker, beat, manage.py): `CoreConfig.ready`, listed last in INSTALLED_APPS, calls
`refuse_unsafe_start` once every app has registered its checks.
"""

from __future__ import annotations

from django.conf import settings
from django.core.checks import CheckMessage, run_checks
from django.core.exceptions import ImproperlyConfigured

TAG = "kassa_deploy"


class UnsafeConfiguration(ImproperlyConfigured):
    """Raised at start-up by production settings while a `kassa_deploy` check fails."""


def refuse_unsafe_start() -> None:
    """Raise ImproperlyConfigured listing every failing `kassa_deploy` check, where the settings ask for it.

    Called when Django is set up (CoreConfig.ready, after every app's), so the web, the worker, beat and
    every management command refuse the same configuration that `manage.py check --deploy` reports.
    """
    if not settings.KASSA_STARTUP_CHECKS:
        return
    messages = run_checks(tags=[TAG], include_deployment_checks=True)
    errors = [message for message in messages if message.is_serious() and not message.is_silenced()]
    if errors:
        lines = "\n".join(_describe(message) for message in sorted(errors, key=lambda m: m.id or ""))
        raise UnsafeConfiguration(
            f"Kassa refuses to start with these settings ({settings.SETTINGS_MODULE}):\n{lines}"
        )


def _describe(message: CheckMessage) -> str:
    hint = f"\n    HINT: {message.hint}" if message.hint else ""
    return f"  {message.id}: {message.msg}{hint}"

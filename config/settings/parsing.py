"""Reading the settings' structured environment variables (config.settings.base)."""

from __future__ import annotations

import json
from typing import Any

import environ
from django.core.exceptions import ImproperlyConfigured


def json_env(env: environ.Env, name: str, **kwargs: Any) -> Any:
    """The JSON in environment variable `name` ({} when unset): a value that is not JSON stops the start
    with the variable's name, never a parser's traceback (and never the value: it may hold a key)."""
    try:
        return json.loads(env.str(name, default="{}"), **kwargs)
    except json.JSONDecodeError as exc:
        raise ImproperlyConfigured(
            f"{name} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            f"it is a JSON object, e.g. {name}='{{}}'"
        ) from None

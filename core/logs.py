"""The log format of every process (docs/operations.md#logs): the `LOGGING` setting, built here.

`LOG_FORMAT=json` (production's default): one JSON object per line with `time` (ISO 8601, UTC), `level`,
`logger`, `message`, `request_id`, `merchant_id` where known, and whatever a call passes in `extra=`
(`invoice_id`, `withdrawal_uid`, the access line's `method`, `route`, `status`, `duration_ms`).
`LOG_FORMAT=text` (development and tests): one readable line, with the request id.

Two filters sit on the handler, so they see every record of every logger: the first adds the request
context, the second redacts secrets (tokens, signing secrets, Bearer credentials, passwords in URLs) from
the message, its arguments, the extra fields and the traceback. Code never logs those; the filter is the
last line of defence when some library or exception message does.
"""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from pythonjsonlogger.json import JsonFormatter as _JsonFormatter

LOG_FORMATS = ("json", "text")
REDACTED = "[redacted]"

# The secret shapes Kassa hands out, and credentials in the usual carriers.
_SECRETS = [
    (re.compile(r"\b(kassa_pk_|kassa_tk_|whsec_)[A-Za-z0-9_\-]+"), rf"\1{REDACTED}"),
    (re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=\-]+", re.IGNORECASE), rf"\1 {REDACTED}"),
    (re.compile(r"([a-z][a-z0-9+.\-]*://)[^/\s:@]*:[^/\s@]*@", re.IGNORECASE), rf"\1{REDACTED}@"),
]
# LogRecord attributes that are not `extra=` fields.
_STANDARD = set(logging.makeLogRecord({}).__dict__) | {
    "message",
    "asctime",
    "request_id",
    "request_id_text",
    "merchant_id",
}


def redact(text: str) -> str:
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, bytes):
        return redact(value.decode("utf-8", "replace"))
    if isinstance(value, tuple | list):
        return type(value)(_redact_value(item) for item in value)
    if isinstance(value, dict):
        return {key: _redact_value(item) for key, item in value.items()}
    if isinstance(value, int | float | bool) or value is None:
        return value
    # An object logged as an argument (an exception, a model): its text, redacted.
    text = str(value)
    cleaned = redact(text)
    return value if cleaned == text else cleaned


class RequestContextFilter(logging.Filter):
    """Adds `request_id` and `merchant_id` (None outside a request or task) to every record, and the objects
    the request or task named (core.request_id.log_objects)."""

    def filter(self, record: logging.LogRecord) -> bool:
        from core.request_id import current_merchant_id, current_objects, current_request_id

        if getattr(record, "request_id", None) is None:
            record.request_id = current_request_id()
        if getattr(record, "merchant_id", None) is None:
            record.merchant_id = current_merchant_id()
        for field, value in current_objects().items():
            if getattr(record, field, None) is None:
                setattr(record, field, value)
        return True


class RedactSecretsFilter(logging.Filter):
    """Redacts secret-shaped text from the message, its arguments, extra fields and traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if record.args:
            record.args = _redact_value(record.args)
        for key, value in list(record.__dict__.items()):
            if key not in _STANDARD and isinstance(value, str | bytes | tuple | list | dict):
                record.__dict__[key] = _redact_value(value)
        if record.exc_info and not record.exc_text:
            # Formatted here once and redacted: a formatter uses an exc_text it finds as it is.
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


class JsonFormatter(_JsonFormatter):
    """One JSON object per line; the fixed fields first, then the `extra=` ones."""

    def add_fields(
        self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]
    ) -> None:
        log_data["time"] = (
            datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z")
        )
        log_data["level"] = record.levelname
        log_data["logger"] = record.name
        log_data["message"] = record.getMessage()
        log_data["request_id"] = getattr(record, "request_id", None)
        merchant_id = getattr(record, "merchant_id", None)
        if merchant_id is not None:
            log_data["merchant_id"] = merchant_id
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                log_data[key] = value
        log_data.update(message_dict)

    # A list of lines with exc_info_as_array: python-json-logger widens the return type.
    def formatException(self, ei: Any) -> str | list[str]:  # type: ignore[override]
        formatted = super().formatException(ei)
        return [redact(line) for line in formatted] if isinstance(formatted, list) else redact(formatted)


class TextFormatter(logging.Formatter):
    """The readable line of development and tests, with the request id ("-" outside a request)."""

    def format(self, record: logging.LogRecord) -> str:
        record.request_id_text = getattr(record, "request_id", None) or "-"
        return super().format(record)


def logging_config(log_format: str, level: str) -> dict[str, Any]:
    """The LOGGING setting for LOG_FORMAT and LOG_LEVEL (a clear error for anything else)."""
    if log_format not in LOG_FORMATS:
        raise ImproperlyConfigured(f"LOG_FORMAT is 'json' or 'text', not {log_format!r}.")
    if not isinstance(logging.getLevelName(level.upper()), int):
        raise ImproperlyConfigured(f"LOG_LEVEL is DEBUG, INFO, WARNING, ERROR or CRITICAL, not {level!r}.")
    formatters = {
        "json": {"()": "core.logs.JsonFormatter", "json_ensure_ascii": False},
        "text": {
            "()": "core.logs.TextFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s [%(request_id_text)s] %(message)s",
        },
    }
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "request_context": {"()": "core.logs.RequestContextFilter"},
            "redact_secrets": {"()": "core.logs.RedactSecretsFilter"},
        },
        "formatters": {log_format: formatters[log_format]},
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": log_format,
                "filters": ["request_context", "redact_secrets"],
            }
        },
        "root": {"handlers": ["console"], "level": level.upper()},
        # Django's own request logger repeats every 4xx/5xx the access line already has; its 5xx lines
        # (with the traceback) still come through at ERROR.
        "loggers": {"django.request": {"level": "ERROR"}},
    }

"""gunicorn's own log lines (the master starting, a worker booting, timing out or crashing) in the format of
every other Kassa line: `--logger-class config.gunicorn_logging.JsonLogger` (docs/operations.md#logs).

The access log stays gunicorn's default, off: Django writes the one access line per request
(core/request_id.py), with the request id and the URL pattern, never the path or the query string.
LOG_FORMAT=text keeps gunicorn's own format.
"""

from __future__ import annotations

import os
from typing import Any

from gunicorn.glogging import Logger

from core.logs import JsonFormatter, RedactSecretsFilter, RequestContextFilter


class JsonLogger(Logger):  # type: ignore[misc]
    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        if os.environ.get("LOG_FORMAT", "json") != "json":
            return
        for handler in self.error_log.handlers:
            handler.setFormatter(JsonFormatter(json_ensure_ascii=False))
            handler.addFilter(RequestContextFilter())
            handler.addFilter(RedactSecretsFilter())

"""What an operator watches: Prometheus metrics, operator alerts and their channels, the log format and the
request id, readiness (docs/operations.md)."""

from __future__ import annotations

import environ

_env = environ.Env()

"""The /metrics page: the registry lives in core.metrics; this package gathers and serves it."""

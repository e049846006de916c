"""CSV cells a spreadsheet opens safely: text starting like a formula is quoted with a leading ', so an
address, a tag, an audit detail or a browser's agent that someone typed never runs as a formula (CSV
injection) when the export is opened."""

from __future__ import annotations

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: str) -> str:
    return f"'{value}" if value[:1] in FORMULA_STARTS else value

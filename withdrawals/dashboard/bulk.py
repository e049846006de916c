"""Bulk withdrawal files: read a CSV, check every line with withdrawals' own rules, preview before sending.

Columns `asset,to,amount,tag` (tag optional), with or without that header line; with a header the columns
may come in any order (`address` and `memo` are accepted as names too). Each line is checked alone by the
rules the API applies: its amount (core.money.amount_input) and withdrawals.rules.check_item (address of
the network, tag, minimum, decimals); the balance is checked by withdrawal_request when the merchant sends.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from django.conf import settings

from core.csvcells import spreadsheet_safe as _cell
from core.errors import FieldError
from core.money import InvalidAmount, amount_input, number_text
from payments.models import Company
from withdrawals.drafts import CodeTotal, code_totals
from withdrawals.models import Withdrawal
from withdrawals.rules import CheckedItem, WithdrawalItem, check_item

COLUMNS = ("asset", "to", "amount", "tag")
ALIASES = {"address": "to", "memo": "tag", "receiver": "to", "destination": "to"}


@dataclass
class Line:
    number: int  # line of the file, 1-based, as the merchant's spreadsheet counts it
    values: dict[str, str]
    errors: list[str] = field(default_factory=list)
    checked: CheckedItem | None = None

    @property
    def ok(self) -> bool:
        return self.checked is not None and not self.errors

    @property
    def item(self) -> WithdrawalItem:
        assert self.checked is not None
        return WithdrawalItem(
            asset=self.checked.code, to=self.checked.to, amount=self.checked.amount, tag=self.checked.tag
        )


@dataclass
class Preview:
    lines: list[Line]
    error: str = ""  # about the whole file

    @property
    def valid(self) -> list[Line]:
        return [line for line in self.lines if line.ok]

    @property
    def invalid(self) -> list[Line]:
        return [line for line in self.lines if not line.ok]

    def totals(self, company: Company) -> list[CodeTotal]:
        """Per code: what the valid lines would hold (amounts plus one fee each) beside what is available."""
        return code_totals(company, [line.checked for line in self.valid if line.checked is not None])


def _rows(text: str) -> Iterable[tuple[int, list[str]]]:
    reader = csv.reader(io.StringIO(text))
    for row in reader:
        if any(cell.strip() for cell in row):
            yield reader.line_num, [cell.strip() for cell in row]


def _header(row: list[str]) -> list[str] | None:
    names = [ALIASES.get(cell.lower(), cell.lower()) for cell in row]
    if "asset" in names and "amount" in names:
        return names
    return None


def parse(text: str) -> Preview:
    """Every line of the file checked on its own; nothing is held or sent here."""
    try:
        rows = list(_rows(text))
    except csv.Error as exc:
        return Preview([], error=f"This is not a readable CSV file: {exc}.")
    if not rows:
        return Preview([], error="The file has no withdrawal lines.")
    columns: list[str] = list(COLUMNS)
    header = _header(rows[0][1])
    if header is not None:
        unknown = [name for name in header if name not in COLUMNS]
        if unknown or len(set(header)) != len(header) or not {"asset", "to", "amount"} <= set(header):
            return Preview([], error="The header must name the columns asset, to, amount and optionally tag.")
        columns, rows = header, rows[1:]
    limit = settings.WITHDRAWAL_MAX_ITEMS
    if len(rows) > limit:
        return Preview([], error=f"At most {limit} withdrawals per file; this one has {len(rows)}.")
    if not rows:
        return Preview([], error="The file has no withdrawal lines.")
    return Preview([_check(number, columns, cells) for number, cells in rows])


def _check(number: int, columns: list[str], cells: list[str]) -> Line:
    if len(cells) > len(columns):
        values = dict(zip(columns, cells, strict=False))
        return Line(
            number, values, [f"Expected the columns {', '.join(columns)}; found {len(cells)} values."]
        )
    values = {name: "" for name in COLUMNS}  # a short line: the missing values are empty, and checked so
    values.update(zip(columns, cells, strict=False))
    try:
        amount = amount_input(values["amount"])
    except InvalidAmount as exc:
        return Line(number, values, [f"amount: {exc}"])
    item = WithdrawalItem(asset=values["asset"], to=values["to"], amount=amount, tag=values["tag"])
    checked, errors = check_item(item)
    return Line(number, values, [_message(error) for error in errors], checked)


def _message(error: FieldError) -> str:
    return f"{error.field}: {error.message}" if error.field else error.message


def apply_errors(preview: Preview, errors: list[FieldError]) -> None:
    """withdrawal_request's `items[i].field` errors (i over the valid lines) back onto their lines."""
    valid = preview.valid
    for error in errors:
        index_text, _, name = error.field.removeprefix("items[").partition("]")
        if error.field.startswith("items[") and index_text.isdigit() and int(index_text) < len(valid):
            valid[int(index_text)].errors.append(f"{name.lstrip('.') or 'item'}: {error.message}")
        else:
            preview.error = f"{preview.error} {error.message}".strip()


def export_rows(
    withdrawals: Iterable[Withdrawal], link: Callable[[Withdrawal], str | None]
) -> Iterable[list[str]]:
    """CSV rows of withdrawals; text a spreadsheet would run as a formula is quoted with a leading '."""
    yield [
        "uid",
        "created_at",
        "status",
        "asset",
        "amount",
        "fee",
        "to",
        "tag",
        "tx_hash",
        "automatic",
        "refund",
    ]
    for withdrawal in withdrawals:
        yield [
            withdrawal.uid,
            withdrawal.created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            withdrawal.status,
            withdrawal.code,
            number_text(withdrawal.amount),
            number_text(withdrawal.fee),
            _cell(withdrawal.to_address),
            _cell(withdrawal.tag),
            _cell(link(withdrawal) or ""),
            "yes" if withdrawal.is_automatic else "no",
            "yes" if withdrawal.is_refund else "no",
        ]

"""Where each chain stands, for `manage.py chain status` and the dashboard's status page."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from alerts.models import Alert
from alerts.services import open_alerts
from chains import payout_book
from chains.backend import get_backend
from chains.base import ChainUnavailable
from chains.house import house_paid
from chains.models import ChainCursor
from chains.scanning import scanned_with
from chains.settled import reversed_counts
from chains.wallets import wallet_reading
from core.assets import all_assets
from core.offer import is_offered


@dataclass(frozen=True)
class CodeStatus:
    code: str
    backend: str
    node_tip: int | None  # None: the node cannot be reached now
    node_error: str
    node_final: int | None  # the chain's own finality (TRON: the solidified block); None: n/a or unknown
    cursor_height: int | None  # the tip the last completed scan saw
    lag: int | None  # node tip - cursor height, in blocks
    paused_reason: str
    spendable: Decimal | None  # the payout wallet's balance (None: unknown)
    gas_tank: Decimal | None  # account chains: the hot address's native coin, which pays the gas (None: n/a)
    gas_paid: Decimal | None  # account chains: the gas the house paid for this code's transactions so far
    hot_address: str  # account chains: where payouts leave from (fund it); "" where the node's wallet pays
    pending_payouts: Decimal  # withdrawals accepted and not yet sent
    reversed_payouts: int  # confirmed payouts a reorganisation took back, not mined again yet
    reversed_deposits: int  # credited deposits a reorganisation took back (a person decides)
    alerts: list[Alert]

    @property
    def short(self) -> bool:
        return self.spendable is not None and self.spendable < self.pending_payouts


def chain_status(codes: list[str] | None = None) -> list[CodeStatus]:
    chosen = codes or [asset.code for asset in all_assets() if is_offered(asset.code)]
    counts = reversed_counts()
    return [_status(code, counts) for code in chosen]


def _status(code: str, reversed_: dict[str, dict[str, int]]) -> CodeStatus:
    backend = get_backend(code)
    cursor = ChainCursor.objects.filter(code=scanned_with(code)[0]).first()  # codes scanned together share it
    node_tip: int | None = None
    node_final: int | None = None
    spendable: Decimal | None = None
    gas_tank: Decimal | None = None
    error = ""
    try:
        node_tip = backend.tip(code).height
        node_final = backend.final_height(code)
        spendable, gas_tank = wallet_reading(code)
    except ChainUnavailable as exc:
        error = str(exc)
    cursor_height = cursor.tip_height if cursor else None
    return CodeStatus(
        code=code,
        backend=backend.name,
        node_tip=node_tip,
        node_error=error,
        node_final=node_final,
        cursor_height=cursor_height,
        lag=None if node_tip is None or cursor_height is None else node_tip - cursor_height,
        paused_reason=cursor.paused_reason if cursor else "",
        spendable=None if spendable is None or not spendable.is_finite() else spendable,
        gas_tank=gas_tank,
        gas_paid=house_paid(code) if backend.has_gas_tank else None,
        hot_address=backend.hot_address(code),
        pending_payouts=payout_book.book().waiting_total(code),
        reversed_payouts=reversed_["payouts"].get(code, 0),
        reversed_deposits=reversed_["deposits"].get(code, 0),
        alerts=open_alerts(about=code),
    )

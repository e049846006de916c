import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chains.backend import get_backend
from chains.base import ChainUnavailable
from chains.house import house_fees
from chains.management import unrouted_command
from chains.models import ChainCursor
from chains.scanning import scanned_with
from chains.status import CodeStatus, chain_status
from core.assets import get_asset
from core.errors import UnsupportedAsset
from core.money import number_text


class Command(BaseCommand):
    help = (
        "Operator tools for the chains: `chain status` (per code: backend, node tip and final block, cursor, "
        "lag, payout wallet vs pending withdrawals, open alerts); `chain fees` (network fees charged to "
        "merchants against what the house paid); `chain rescan --code C --from-height N` (recovery); `chain "
        "unrouted [list|assign ID --invoice I|--static-address S|refund ID [--to A]]` (payments nobody owns)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        status = actions.add_parser("status", help="where each offered chain stands")
        status.add_argument("--code", action="append", help="only this payment code (repeatable)")
        status.add_argument("--json", action="store_true", help="one JSON object per code")
        fees = actions.add_parser(
            "fees", help="network fees charged to merchants against what the house account paid the network"
        )
        fees.add_argument("--code", action="append", help="only this payment code (repeatable)")
        fees.add_argument("--json", action="store_true", help="one JSON object per code")
        rescan = actions.add_parser("rescan", help="scan a chain again from a block height")
        rescan.add_argument("--code", required=True, help="payment code, e.g. ltc")
        rescan.add_argument("--from-height", required=True, type=int, help="report everything after it")
        unrouted_command.add_arguments(
            actions.add_parser("unrouted", help="payments no invoice or address owns: list, assign, refund")
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "status":
            self._status(options)
        elif options["action"] == "fees":
            self._fees(options)
        elif options["action"] == "unrouted":
            unrouted_command.run(options, self.stdout.write)
        else:
            self._rescan(options["code"], options["from_height"])

    def _status(self, options: dict[str, Any]) -> None:
        try:
            codes = [get_asset(code).code for code in options["code"] or []]
        except UnsupportedAsset as exc:
            raise CommandError(str(exc)) from exc
        rows = chain_status(codes or None)
        for row in rows:
            self.stdout.write(json.dumps(_as_json(row)) if options["json"] else _as_line(row))

    def _fees(self, options: dict[str, Any]) -> None:
        try:
            codes = [get_asset(code).code for code in options["code"] or []]
        except UnsupportedAsset as exc:
            raise CommandError(str(exc)) from exc
        for row in house_fees(codes or None):
            if options["json"]:
                self.stdout.write(
                    json.dumps(
                        {
                            "code": row.code,
                            "withdrawalsDone": row.withdrawals_done,
                            "charged": number_text(row.charged),
                            "coin": row.coin,
                            "paidPayouts": number_text(row.paid_payouts),
                            "paidSweeps": number_text(row.paid_sweeps),
                        }
                    )
                )
                continue
            self.stdout.write(
                f"{row.code:<10} {row.withdrawals_done} withdrawals done, charged {number_text(row.charged)} "
                f"{row.code}; house paid {number_text(row.paid_payouts)} {row.coin} for payouts, "
                f"{number_text(row.paid_sweeps)} {row.coin} for sweeps and top-ups"
            )

    def _rescan(self, code: str, height: int) -> None:
        try:
            code = get_asset(code).code
        except UnsupportedAsset as exc:
            raise CommandError(str(exc)) from exc
        if height < 0:
            raise CommandError("--from-height is a block height (0 or more)")
        backend = get_backend(code)
        try:
            tip = backend.tip(code).height
            if height > tip:
                raise CommandError(f"--from-height {height} is above the node's tip {tip}")
            cursor = backend.cursor_at(code, height)
        except ChainUnavailable as exc:
            raise CommandError(f"the {code} node cannot be reached: {exc}") from exc
        ChainCursor.objects.update_or_create(code=scanned_with(code)[0], defaults={"cursor": cursor})
        self.stdout.write(
            f"{code}: the next scan reports everything after block {height} (tip {tip}); "
            "what was already ingested is not changed"
        )


def _as_json(row: CodeStatus) -> dict[str, Any]:
    return {
        "code": row.code,
        "backend": row.backend,
        "nodeTip": row.node_tip,
        "nodeError": row.node_error or None,
        "nodeFinal": row.node_final,
        "cursor": row.cursor_height,
        "lag": row.lag,
        "paused": row.paused_reason or None,
        "payoutWallet": None if row.spendable is None else number_text(row.spendable),
        "gasTank": None if row.gas_tank is None else number_text(row.gas_tank),
        "hotAddress": row.hot_address or None,
        "gasPaid": None if row.gas_paid is None else number_text(row.gas_paid),
        "pendingPayouts": number_text(row.pending_payouts),
        "reversedPayouts": row.reversed_payouts,
        "reversedDeposits": row.reversed_deposits,
        "alerts": [
            {"kind": a.kind, "key": a.key, "message": a.message, "count": a.count} for a in row.alerts
        ],
    }


def _as_line(row: CodeStatus) -> str:
    node = f"tip {row.node_tip}" if row.node_tip is not None else f"node DOWN ({row.node_error})"
    if row.node_final is not None:
        node += f"  final {row.node_final}"
    wallet = "payout wallet n/a" if row.spendable is None else f"payout wallet {number_text(row.spendable)}"
    short = " SHORT" if row.short else ""
    parts = [
        f"{row.code:<10} {row.backend:<12} {node}",
        f"cursor {row.cursor_height if row.cursor_height is not None else '-'}",
        f"lag {row.lag if row.lag is not None else '-'}",
        f"{wallet} vs pending {number_text(row.pending_payouts)}{short}",
        *([] if row.gas_tank is None else [f"gas tank {number_text(row.gas_tank)}"]),
        *([] if row.gas_paid is None else [f"gas paid {number_text(row.gas_paid)}"]),
        f"reversed payouts {row.reversed_payouts} deposits {row.reversed_deposits}",
        f"alerts {len(row.alerts)}",
    ]
    if row.paused_reason:
        parts.append(f"PAUSED: {row.paused_reason}")
    lines = ["  ".join(parts)]
    if row.hot_address:
        lines.append(f"    hot address {row.hot_address} (fund it: it pays the withdrawals and their gas)")
    lines += [f"    ALERT {a.kind} {a.key} (x{a.count}): {a.message}" for a in row.alerts]
    return "\n".join(lines)

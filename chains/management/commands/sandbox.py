import json
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chains import simulator as sandbox
from core.errors import DomainError
from core.money import number_text
from core.offer import sandbox_enabled


class Command(BaseCommand):
    help = (
        "Drive the sandbox chain: `sandbox deposit ...` puts a transfer in the mempool, `sandbox mine` mines."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        deposit = actions.add_parser("deposit", help="send a simulated transfer to an address")
        deposit.add_argument("--address", required=True)
        deposit.add_argument("--asset", required=True, help="payment code, e.g. btc or trc20usdt")
        deposit.add_argument("--amount", required=True)
        deposit.add_argument("--tag", default="", help="TON memo")
        deposit.add_argument(
            "--from",
            dest="sender",
            default="sandbox-faucet",
            help="the sender (a refund of it goes back there)",
        )
        deposit.add_argument("--outcome", default="confirm", choices=["confirm", "fail", "freeze"])
        mine = actions.add_parser("mine", help="mine blocks on every sandbox chain (or one)")
        mine.add_argument("--count", type=int, default=1)
        mine.add_argument("--asset", help="only this payment code")
        for name, command in sandbox.commands.items():
            command.add_arguments(actions.add_parser(name, help=command.help))

    def handle(self, *args: Any, **options: Any) -> None:
        if not sandbox_enabled():
            raise CommandError(
                "The sandbox is not enabled on this deployment (SANDBOX_ENABLED is off): it has no simulated "
                "chain to drive."
            )
        try:
            if options["action"] == "deposit":
                self._deposit(options)
            elif options["action"] in sandbox.commands:
                self.stdout.write(json.dumps(sandbox.commands[options["action"]].run(options)))
            else:
                tips = sandbox.sandbox_mine(
                    count=options["count"], codes=[options["asset"]] if options["asset"] else None
                )
                self.stdout.write(json.dumps({"mined": options["count"], "tips": tips}))
        except DomainError as exc:
            details = "; ".join(f"{e.field}: {e.message}" for e in exc.errors) or exc.detail
            raise CommandError(details) from exc

    def _deposit(self, options: dict[str, Any]) -> None:
        try:
            amount = Decimal(options["amount"])
        except InvalidOperation as exc:
            raise CommandError(f"--amount {options['amount']!r} is not a number") from exc
        if not amount.is_finite() or amount <= 0:
            raise CommandError("--amount must be a positive number")
        tx = sandbox.sandbox_deposit(
            company=None,
            code=options["asset"],
            address=options["address"],
            amount=amount,
            tag=options["tag"],
            outcome=options["outcome"],
            sender=options["sender"],
        )
        self.stdout.write(json.dumps({"txid": tx.txid, "asset": tx.code, "amount": number_text(tx.amount)}))

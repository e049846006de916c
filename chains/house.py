"""The house account (docs/decisions.md, fees): the network fees the operator pays, booked per mined chain
transaction in the commit that settles it, and the report of what merchants were charged against them."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db import IntegrityError, transaction

from chains import payout_book
from chains.backend import get_backend
from chains.models import ChainTx, HouseEntry
from core.assets import all_assets
from core.money import exact_sum
from core.offer import on_sandbox_backend


def fee_coin(code: str) -> str:
    """The coin the network fees of `code` are paid in, as its backend says (tokens: their chain's coin)."""
    return get_backend(code).fee_coin(code)


def house_book_network_fee(chain_tx: ChainTx) -> HouseEntry | None:
    """Book what a mined transaction paid the network (its measured `fee_paid`, else the fee it was signed
    with, which on UTXO chains is exact). Idempotent; call it in the commit that settles the transaction.
    Sandbox transactions pay nothing real and are not booked."""
    assert transaction.get_connection().in_atomic_block, "booked in the commit that settles the transaction"
    paid = chain_tx.fee_paid if chain_tx.fee_paid is not None else chain_tx.fee
    if on_sandbox_backend(chain_tx.code) or not paid:
        return None
    try:
        with transaction.atomic():
            return HouseEntry.objects.create(
                code=chain_tx.code, coin=fee_coin(chain_tx.code), amount=paid, chain_tx=chain_tx
            )
    except IntegrityError:
        return None  # booked already (a replay of the settlement)


@dataclass(frozen=True)
class FeeRow:
    code: str
    withdrawals_done: int
    charged: Decimal  # network fees charged to merchants, in the code
    coin: str
    paid_payouts: Decimal  # network fees the house paid for payouts (replacements and children included)
    paid_sweeps: Decimal  # for sweeps and what readied them (top-ups; TRON: activations, delegations)


def house_fees(codes: list[str] | None = None) -> list[FeeRow]:
    chosen = codes or [asset.code for asset in all_assets() if not on_sandbox_backend(asset.code)]
    return [_row(code) for code in chosen]


def house_paid(code: str) -> Decimal:
    """All the house account paid the network for `code`'s transactions, in its fee coin."""
    return exact_sum(HouseEntry.objects.filter(code=code).values_list("amount", flat=True))


def _row(code: str) -> FeeRow:
    done, charged = payout_book.book().done(code)
    entries = HouseEntry.objects.filter(code=code)
    sweeps = [
        ChainTx.Kind.SWEEP,
        ChainTx.Kind.TOPUP,
        ChainTx.Kind.ACTIVATE,
        ChainTx.Kind.DELEGATE,
        ChainTx.Kind.UNDELEGATE,
    ]
    return FeeRow(
        code=code,
        withdrawals_done=done,
        charged=charged,
        coin=fee_coin(code),
        paid_payouts=exact_sum(entries.exclude(chain_tx__kind__in=sweeps).values_list("amount", flat=True)),
        paid_sweeps=exact_sum(entries.filter(chain_tx__kind__in=sweeps).values_list("amount", flat=True)),
    )

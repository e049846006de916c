"""Driving the sandbox chain by hand (API, `manage.py sandbox`, pay page simulator) and by beat."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction

from chains.addresses import InvalidAddress, validate_address
from chains.deposits import route_lookup
from chains.sandbox import new_txid, tip_height
from chains.scanning import chain_scan
from core.assets import check_amount_decimals, get_asset
from core.errors import FieldError, NotFound, UnsupportedAsset, ValidationFailed
from core.money import InvalidAmount, amount_input
from core.offer import is_sandbox, sandbox_codes
from payments.models import Company, DepositAddress, SandboxBlock, SandboxTransaction

MAX_BLOCKS_PER_CALL = 100

# Called with the codes that got new blocks, after their deposits were ingested (withdrawals hook in here).
after_blocks: list[Callable[[list[str]], None]] = []


@dataclass(frozen=True)
class SandboxCommand:
    """A `manage.py sandbox <name>` action an app adds (invoices: expire, withdrawals: reject), so payments
    offers every sandbox action in one command without importing the apps built on it."""

    help: str
    add_arguments: Callable[[Any], None]
    run: Callable[[dict[str, Any]], dict[str, Any]]  # options -> JSON-able result


commands: dict[str, SandboxCommand] = {}


def _sandbox_asset(code: str, field: str = "asset") -> str:
    asset = get_asset(code)
    if not is_sandbox(asset.code):
        raise ValidationFailed(
            [FieldError(field, UnsupportedAsset.code, f"{asset.code} is not on the sandbox chain")]
        )
    return asset.code


def sandbox_deposit(
    *,
    company: Company | None,
    code: str,
    address: str,
    amount: Decimal | str,
    tag: str = "",
    outcome: str = SandboxTransaction.Outcome.CONFIRM,
    sender: str = "sandbox-faucet",
) -> SandboxTransaction:
    """Put an incoming transfer in the mempool and ingest it at once (the payment is *seen*).

    With a company (the API, the dashboard), the address (and tag) must be one of its own: a merchant
    cannot move another merchant's sandbox balance, and another merchant's address is refused exactly like
    one the gateway does not know, so the answer tells nobody whose an address is. Without one (the
    operator's `manage.py sandbox deposit`) any valid address is paid; an unknown one is recorded unrouted.
    `sender` is the address it comes from (a refund of an unrouted one goes back there).
    """
    code = _sandbox_asset(code)
    try:
        amount = amount_input(amount)
    except InvalidAmount as exc:
        raise ValidationFailed([FieldError("amount", exc.code, str(exc))]) from exc
    check_amount_decimals(amount, code)
    try:
        address = validate_address(code, address)
    except InvalidAddress as exc:
        raise ValidationFailed([FieldError("address", "invalid_address", str(exc))]) from exc
    if company is not None and not _is_own(company, code, address, tag):
        raise NotFound("No such deposit address.")
    with transaction.atomic():
        tx = SandboxTransaction.objects.create(
            code=code,
            txid=new_txid(),
            kind=SandboxTransaction.Kind.DEPOSIT,
            from_address=sender,
            to_address=address,
            tag=tag or "",
            amount=amount,
            outcome=outcome,
        )
    chain_scan(code)
    return tx


def _is_own(company: Company, code: str, address: str, tag: str) -> bool:
    """One of the company's deposit addresses, with this tag; without a tag, any of its tags (TON shares
    one address between all its tags: an untagged transfer to it is recorded, credited to nobody)."""
    lookup = route_lookup(code, address, tag)
    mine = DepositAddress.objects.filter(company=company, route_key=lookup["route_key"])
    if lookup["tag"]:
        mine = mine.filter(tag=lookup["tag"])
    return mine.exists()


def sandbox_mine(*, count: int = 1, codes: list[str] | None = None) -> dict[str, int]:
    """Mine `count` blocks on each sandbox chain (or the given codes); the first takes the mempool.

    Returns the new tip per code. Deposits are ingested (confirmations, credits, webhooks) before return.
    """
    if not 1 <= count <= MAX_BLOCKS_PER_CALL:
        raise ValidationFailed(
            [FieldError("count", "validation_error", f"count must be 1 to {MAX_BLOCKS_PER_CALL}")]
        )
    chosen = [_sandbox_asset(code) for code in codes] if codes else sandbox_codes()
    tips: dict[str, int] = {}
    for code in chosen:
        tips[code] = _mine_blocks(code, count)
        chain_scan(code)
    for hook in after_blocks:
        hook(chosen)
    return tips


def _mine_blocks(code: str, count: int) -> int:
    """Add `count` blocks above the tip of `code`, the first taking its mempool; returns the new tip.

    Miners of one code take turns on the row lock of its first block (the one row every miner finds: the
    top moves) and read the tip only once they hold it; SQLite's IMMEDIATE transactions serialise them at
    BEGIN. A chain without blocks has no row to lock: two first miners both insert height 1, and the loser
    retries behind the winner's blocks.
    """
    for attempt in range(3):
        try:
            with transaction.atomic():
                list(SandboxBlock.objects.select_for_update().filter(code=code).order_by("height")[:1])
                tip = tip_height(code)
                SandboxBlock.objects.bulk_create(
                    [SandboxBlock(code=code, height=tip + offset) for offset in range(1, count + 1)]
                )
                SandboxTransaction.objects.filter(code=code, block_height__isnull=True).update(
                    block_height=tip + 1
                )
            return tip + count
        except IntegrityError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")

"""The rules every withdrawal meets, whoever asks for it (docs/api.md, docs/decisions.md).

Manual and bulk withdrawals, automatic sweeps, invoice refunds and the auto-withdrawal settings all check
a destination through `check_destination` and an amount through `check_amount`, so the four can never
drift apart. The checks return field errors instead of raising: callers list every failing item at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from chains.addresses import InvalidAddress, validate_address
from core.assets import Asset
from core.errors import FieldError, UnsupportedAsset
from core.money import decimal_places, number_text
from core.offer import require_offered

BELOW_MINIMUM = "below_minimum"
TAG_REQUIRED = "tag_required"
TAG_NOT_SUPPORTED = "tag_not_supported"
INVALID_ADDRESS = InvalidAddress.code


@dataclass(frozen=True)
class WithdrawalItem:
    """One withdrawal as asked for: `asset` is a payment code in any case, `amount` is net."""

    asset: str
    to: str
    amount: Decimal
    tag: str = ""


@dataclass(frozen=True)
class CheckedItem:
    """A withdrawal that passed every rule: code lowercase, address in its stored form."""

    code: str
    to: str
    tag: str
    amount: Decimal
    fee: Decimal


def _field(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def check_asset(raw: str, *, field: str) -> tuple[Asset | None, list[FieldError]]:
    try:
        return require_offered(raw), []
    except UnsupportedAsset as exc:
        return None, [FieldError(field, UnsupportedAsset.code, exc.detail)]


def check_destination(
    asset: Asset, to: str, tag: str | None, *, address_field: str, tag_field: str
) -> tuple[str, list[FieldError]]:
    """The address in its stored form (or "" when invalid) and the address and tag errors."""
    errors: list[FieldError] = []
    try:
        address = validate_address(asset.code, to)
    except InvalidAddress as exc:
        address = ""
        errors.append(FieldError(address_field, INVALID_ADDRESS, str(exc)))
    if asset.tag_required and not (tag or "").strip():
        errors.append(
            FieldError(tag_field, TAG_REQUIRED, f"{asset.code} withdrawals need the receiver's tag")
        )
    elif not asset.tag_required and tag:
        errors.append(FieldError(tag_field, TAG_NOT_SUPPORTED, f"{asset.code} addresses take no tag"))
    return address, errors


def check_amount(asset: Asset, amount: Decimal, *, field: str) -> list[FieldError]:
    """At least the asset's minimal withdrawal, and no more decimals than it carries (never rounded)."""
    if decimal_places(amount) > asset.amount_decimals:
        return [
            FieldError(
                field, "invalid", f"{asset.code} amounts have at most {asset.amount_decimals} decimals"
            )
        ]
    if amount < asset.min_withdrawal:
        return [
            FieldError(
                field,
                BELOW_MINIMUM,
                f"the minimal {asset.code} withdrawal is {number_text(asset.min_withdrawal)}",
            )
        ]
    return []


def check_item(item: WithdrawalItem, *, prefix: str = "") -> tuple[CheckedItem | None, list[FieldError]]:
    """Every rule of one withdrawal; errors name `<prefix>.asset|to|tag|amount`."""
    asset, errors = check_asset(item.asset, field=_field(prefix, "asset"))
    if asset is None:
        return None, errors
    address, errors = check_destination(
        asset,
        item.to,
        item.tag,
        address_field=_field(prefix, "to"),
        tag_field=_field(prefix, "tag"),
    )
    errors += check_amount(asset, item.amount, field=_field(prefix, "amount"))
    if errors:
        return None, errors
    tag = item.tag.strip() if asset.tag_required else ""
    return CheckedItem(asset.code, address, tag, item.amount, asset.network_fee), []

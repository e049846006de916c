"""Automatic withdrawals (docs/api.md): the per-code rules and their sweeps.

A sweep is an ordinary withdrawal marked automatic (`withdrawal_accept`, same holds and webhooks): when a
rule is enabled and the available balance reached its amount, the whole available balance less the
network fee goes to the rule's address. Sweeps run from beat every AUTO_WITHDRAWAL_SWEEP_SECONDS and after
each sandbox block (deposits are credited there); never two in flight for one company and code.

The payout policy (withdrawals.policy) applies to sweeps: its limits cap a sweep (it sends what they allow
now, a later sweep the rest), and a sweep to a new address or above the approval threshold is held like any
withdrawal. The rule's address can be changed over the API too, so the cool-down is what keeps a rule
pointed elsewhere from emptying the balance before the merchant sees it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef

from core.assets import get_asset
from core.errors import FieldError, UnsupportedAsset, ValidationFailed
from core.money import MONEY_CONTEXT
from core.offer import require_offered
from payments.ledger import account_for_update
from payments.models import Account, Company
from withdrawals.models import AutoWithdrawalRule, Withdrawal
from withdrawals.policy import payout_policy_read
from withdrawals.rules import TAG_NOT_SUPPORTED, WithdrawalItem, check_amount, check_destination, check_item
from withdrawals.services import withdrawal_accept

logger = logging.getLogger(__name__)

Status = Withdrawal.Status


@dataclass(frozen=True)
class RuleInput:
    amount: Decimal
    is_enabled: bool
    address: str
    tag: str | None


def _check_rule(key: str, rule: RuleInput) -> tuple[dict[str, Any] | None, list[FieldError]]:
    prefix = f"assets.{key}"
    try:
        asset = require_offered(key)
    except UnsupportedAsset as exc:
        return None, [FieldError(prefix, UnsupportedAsset.code, exc.detail)]
    errors: list[FieldError] = []
    # A disabled rule may be the unconfigured one GET shows (amount 0, address ""): what GET answers can
    # always be sent back. Whatever is filled in is still checked; an enabled rule needs everything.
    if rule.is_enabled or rule.amount != 0:
        errors += check_amount(asset, rule.amount, field=f"{prefix}.amount")
    address = ""
    if rule.is_enabled or rule.address.strip():
        address, destination_errors = check_destination(
            asset,
            rule.address,
            rule.tag,
            address_field=f"{prefix}.withdrawalAddress",
            tag_field=f"{prefix}.withdrawalTag",
        )
        errors += destination_errors
    elif rule.tag and not asset.tag_required:
        errors.append(
            FieldError(f"{prefix}.withdrawalTag", TAG_NOT_SUPPORTED, f"{asset.code} addresses take no tag")
        )
    if errors:
        return None, errors
    tag = (rule.tag or "").strip() if asset.tag_required else ""
    values = {"amount": rule.amount, "is_enabled": rule.is_enabled, "address": address, "tag": tag}
    return {"code": asset.code, **values}, []


def auto_withdrawal_rules_check(rules: Mapping[str, RuleInput]) -> list[dict[str, Any]]:
    """Every rule of a change checked (the dashboard form shows these errors before it asks for the step-up):
    the rows to save, or ValidationFailed listing every failing field."""
    if not rules:
        raise ValidationFailed([FieldError("assets", "required", "an object keyed by payment code")])
    changes: list[dict[str, Any]] = []
    errors: list[FieldError] = []
    seen: set[str] = set()
    for key, rule in rules.items():
        change, rule_errors = _check_rule(key, rule)
        errors += rule_errors
        if change is None:
            continue
        if change["code"] in seen:  # "btc" and "BTC": which one was meant?
            errors.append(FieldError(f"assets.{key}", "duplicate", f"{change['code']} is given twice"))
        seen.add(change["code"])
        changes.append(change)
    if errors:
        raise ValidationFailed(errors)
    return changes


def auto_withdrawal_rules_set(*, company: Company, rules: Mapping[str, RuleInput]) -> None:
    """PATCH /api/company/auto-withdrawals: every rule valid, then all saved, or none (all-or-nothing)."""
    changes = auto_withdrawal_rules_check(rules)
    with transaction.atomic():
        for change in changes:
            code = change.pop("code")
            AutoWithdrawalRule.objects.update_or_create(company=company, code=code, defaults=change)


@transaction.atomic
def auto_withdrawal_sweep(*, rule_id: int) -> Withdrawal | None:
    """(new) -> processing, automatic: the whole available balance less the network fee, to the rule's
    address, when the rule is enabled, available >= its amount and no sweep of it is in flight."""
    rule = (
        AutoWithdrawalRule.objects.select_for_update(of=("self",))
        .select_related("company")
        .filter(pk=rule_id)
        .first()
    )
    if rule is None or not rule.is_enabled:
        return None
    # The rule's lock serializes sweeps of one company and code; the partial unique constraint on
    # (company, code) of processing automatic withdrawals backs it whatever else happens.
    in_flight = Withdrawal.objects.filter(
        company_id=rule.company_id, code=rule.code, is_automatic=True, status=Status.PROCESSING
    )
    if in_flight.exists():
        return None
    # Before the account (the lock order of withdrawals.policy); None, without a query, for most companies.
    policy = payout_policy_read(company=rule.company, codes=[rule.code], lock=True)
    asset = get_asset(rule.code)
    account = account_for_update(company_id=rule.company_id, code=rule.code)
    if account.available < rule.amount:
        return None
    with localcontext(MONEY_CONTEXT):
        net = account.available - asset.network_fee
    allowance = policy.allowance(rule.code) if policy is not None else None
    if allowance is not None and net > allowance:
        net = allowance  # what the limits allow now; a later sweep sends the rest
    if net < asset.min_withdrawal:
        return None  # a threshold near the minimum: wait until the sweep can send at least the minimum
    checked, errors = check_item(WithdrawalItem(asset=rule.code, to=rule.address, amount=net, tag=rule.tag))
    if checked is None:
        logger.warning("auto-withdrawal rule %s no longer passes the rules: %s", rule.pk, errors)
        return None
    holds = policy.holds([checked]) if policy is not None else None
    return withdrawal_accept(company=rule.company, items=[checked], is_automatic=True, holds=holds)[0]


def auto_withdrawal_sweep_due(*, codes: Sequence[str] | None = None) -> list[Withdrawal]:
    """Beat (and the sandbox hook): sweep every enabled rule whose balance reached its amount."""
    in_flight = Withdrawal.objects.filter(
        company_id=OuterRef("company_id"), code=OuterRef("code"), is_automatic=True, status=Status.PROCESSING
    )
    due = AutoWithdrawalRule.objects.filter(is_enabled=True).exclude(Exists(in_flight))
    if codes is not None:
        due = due.filter(code__in=list(codes))
    rules = list(due.order_by("pk").values_list("pk", "company_id", "code", "amount"))
    # Balances compared in Python: SQL compares SQLite's text-stored money as text (core.fields).
    available = {
        (company_id, code): amount
        for company_id, code, amount in Account.objects.filter(
            company_id__in={rule[1] for rule in rules}, code__in={rule[2] for rule in rules}
        ).values_list("company_id", "code", "available")
    }
    funded = [pk for pk, company_id, code, amount in rules if available.get((company_id, code), -1) >= amount]
    swept = []
    for rule_id in funded[: settings.WITHDRAWAL_POLL_BATCH]:
        try:
            withdrawal = auto_withdrawal_sweep(rule_id=rule_id)
        except Exception:
            logger.exception("auto-withdrawal rule %s: sweep failed", rule_id)
            continue
        if withdrawal is not None:
            swept.append(withdrawal)
    return swept


def auto_withdrawal_sandbox_after_blocks(codes: list[str]) -> None:
    """chains.simulator.after_blocks: deposits on these chains were just credited; sweep what is due."""
    auto_withdrawal_sweep_due(codes=codes)

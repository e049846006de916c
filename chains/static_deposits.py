"""Static deposit addresses (docs/decisions.md) and their deposit webhooks (docs/api.md)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.db import IntegrityError, connection, transaction

from chains.deposit_addresses import deposit_address_allocate
from chains.deposit_events import deposit_body
from chains.deposits import register_deposit_handler
from core.assets import get_asset, normalize_code
from core.errors import FieldError, UnsupportedAsset, ValidationFailed
from core.offer import is_sandbox, require_offered
from payments.ledger import Credit, ledger_credit_many
from payments.models import Company, Deposit, DepositAddress, LedgerEntry, StaticDepositAddress
from webhooks.models import WebhookEvent
from webhooks.services import webhook_publish_many


def static_address_get_or_create(
    *, company: Company, internal_user_id: str, email: str, asset: str, network: str
) -> tuple[StaticDepositAddress, bool]:
    """The user's address on `network`: the existing one when the internal id asked before (or the e-mail,
    where the company matches by e-mail: `Company.static_deposit_match_email`)."""
    code = require_offered(network).code
    if normalize_code(asset) != get_asset(code).base:
        raise ValidationFailed(
            [
                FieldError(
                    "asset",
                    UnsupportedAsset.code,
                    f"network {code} carries {get_asset(code).base}, not {asset}",
                )
            ]
        )
    existing = _find(company, code, internal_user_id, email)
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            deposit_address = deposit_address_allocate(
                company=company, code=code, owner=DepositAddress.Owner.STATIC
            )
            static = StaticDepositAddress.objects.create(
                company=company,
                deposit_address=deposit_address,
                code=code,
                internal_user_id=internal_user_id,
                email=email,
            )
    except IntegrityError:
        # The same user asked twice at once: the other request created it; ours allocated nothing.
        found = _find(company, code, internal_user_id, email)
        if found is None:
            raise
        return found, False
    return static, True


def _find(company: Company, code: str, internal_user_id: str, email: str) -> StaticDepositAddress | None:
    """The user's address by their internal id; by e-mail too only where the company turned that on. The
    e-mail is the end user's own claim: unverified, matching by it would hand one user another's address."""
    mine = StaticDepositAddress.objects.filter(company=company, code=code).select_related("deposit_address")
    found = mine.filter(internal_user_id=internal_user_id).first()
    if found is None and email and company.static_deposit_match_email:
        found = mine.filter(email__iexact=email).order_by("created_at").first()
    return found


@transaction.atomic
def static_deposit_matching_set(*, company_id: UUID, match_email: bool) -> bool:
    """Turn matching by e-mail on or off for the company's static addresses; whether it changed (the caller
    records the change in the same transaction)."""
    company = Company.objects.select_for_update().get(pk=company_id)
    if company.static_deposit_match_email == match_email:
        return False
    company.static_deposit_match_email = match_email
    company.save(update_fields=["static_deposit_match_email", "updated_at"])
    return True


class StaticDepositHandler:
    """Deposits to static addresses: processing when seen, credited and done when confirmed."""

    def on_seen(self, deposit: Deposit) -> None:
        self.on_seen_many([deposit])

    def on_seen_many(self, deposits: list[Deposit]) -> None:
        _publish([(deposit, "processing") for deposit in deposits])

    def on_confirmed(self, deposit: Deposit) -> None:
        self.on_confirmed_many([deposit])

    def on_confirmed_many(self, deposits: list[Deposit]) -> None:
        credits = []
        for deposit in deposits:
            assert deposit.company_id is not None
            credits.append(
                Credit(
                    deposit.company_id,
                    deposit.code,
                    deposit.amount,
                    LedgerEntry.Kind.DEPOSIT_CREDIT,
                    f"deposit:{deposit.pk}",
                )
            )
        ledger_credit_many(credits)
        _publish([(deposit, "done") for deposit in deposits])

    def on_failed(self, deposit: Deposit) -> None:
        # "failed" or "frozen", as the webhook names them; a dropped transfer failed on the chain's side.
        _publish([(deposit, "frozen" if deposit.status == Deposit.Status.FROZEN else "failed")])


def _publish(updates: list[tuple[Deposit, str]]) -> None:
    """One deposit webhook event per (deposit, status); their static addresses and companies read at once."""
    statics = _statics({deposit.deposit_address_id for deposit, _ in updates if deposit.deposit_address_id})
    companies = Company.objects.in_bulk({row["company_id"] for row in statics.values()})
    events = []
    for deposit, status in updates:
        assert deposit.deposit_address_id is not None
        static = statics[deposit.deposit_address_id]
        company = companies[static["company_id"]]
        asset = get_asset(deposit.code)
        body = deposit_body(
            amount=deposit.amount,
            asset=asset.base,
            network=asset.code,
            deposit_address=static["deposit_address__address"],
            status=status,
            address_id=str(static["pk"]),
            internal_user_id=static["internal_user_id"],
            tx_hash=deposit.txid,
            email=static["email"] or None,
            fee_payer=company.default_fee_payer,
            sandbox=is_sandbox(asset.code),
        )
        events.append((company, WebhookEvent.Family.DEPOSIT, str(deposit.pk), body))
    webhook_publish_many(events)


_STATIC_COLUMNS = (
    *("pk", "deposit_address_id", "deposit_address__address"),
    *("internal_user_id", "email", "company_id"),
)
# PostgreSQL: one probe of the unique index per address. With the same ids as an IN list the planner
# estimates a thousand probes dearer than reading the whole table, which it then does (37 ms instead of 3 for
# a scan's batch among 300,000 static addresses).
_STATICS_SQL = f"""SELECT s.id, s.deposit_address_id, d.address, s.internal_user_id, s.email, s.company_id
    FROM unnest(%s::uuid[]) AS wanted (id)
    JOIN {StaticDepositAddress._meta.db_table} AS s ON s.deposit_address_id = wanted.id
    JOIN {DepositAddress._meta.db_table} AS d ON d.id = s.deposit_address_id"""  # noqa: S608 - table names


def _statics(deposit_address_ids: set[UUID]) -> dict[UUID, dict[str, Any]]:
    """The static address rows of these deposit addresses (`_STATIC_COLUMNS`), by deposit address id."""
    if connection.vendor != "postgresql":
        rows = StaticDepositAddress.objects.filter(deposit_address_id__in=deposit_address_ids)
        return {row["deposit_address_id"]: row for row in rows.values(*_STATIC_COLUMNS)}
    with connection.cursor() as cursor:
        cursor.execute(_STATICS_SQL, [list(deposit_address_ids)])
        return {row[1]: dict(zip(_STATIC_COLUMNS, row, strict=True)) for row in cursor.fetchall()}


register_deposit_handler(DepositAddress.Owner.STATIC, StaticDepositHandler())

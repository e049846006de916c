"""What earlier runs left behind, removed at the start of a run so that two runs in a row measure the same
database: every bench merchant (`create_merchant`, one a run) with every row that hangs off it, the sandbox
transfers that paid it, and the Celery messages the service published that no worker consumed.

A bench merchant is a user whose e-mail is `bench-<12 hex>@bench.kassa.local` (`bench_merchant_email`) and
the company it owns. The `scale` kind's two merchants (tools/bench/scale.py: scale@ and scale-small@ the same
domain) do not match and keep their million rows between runs.

The rows go by set-based DELETEs (`... WHERE company_id IN (...)`), children before parents, in one
transaction: a run leaves hundreds of thousands of them. The sandbox chain stays consistent: its blocks are
kept (the tip, and the scan cursor that stands at it, do not move back); only the transactions paying the
deleted addresses and withdrawals go, every one in a block the cursor has passed, with the deposits that
recorded them.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from django.db.models import CharField, Exists, Model, OuterRef, Q, QuerySet, Value
from django.db.models.functions import Concat

BENCH_EMAIL_DOMAIN = "bench.kassa.local"
BENCH_MERCHANT_NAME = "Bench Shop"
_BENCH_EMAIL = re.compile(rf"bench-[0-9a-f]{{12}}@{re.escape(BENCH_EMAIL_DOMAIN)}")


def bench_merchant_email() -> str:
    """A fresh bench merchant's e-mail (and username): what `remove_earlier_merchants` recognises."""
    return f"bench-{secrets.token_hex(6)}@{BENCH_EMAIL_DOMAIN}"


def is_bench_email(email: str) -> bool:
    return _BENCH_EMAIL.fullmatch(email) is not None


@dataclass(frozen=True)
class Removed:
    merchants: int
    rows: dict[str, int] = field(default_factory=dict)  # deleted rows by table
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.rows.values())

    def describe(self) -> str:
        if not self.merchants:
            return "no earlier bench merchants to remove"
        plural = "s" if self.merchants != 1 else ""
        return (
            f"removed {self.merchants} earlier bench merchant{plural}: {self.total:,} rows "
            f"in {self.seconds:.1f} s (the scale merchants stay)"
        )


def clean_earlier_runs() -> None:
    """The start of a run: remove the earlier runs' bench merchants and, with Redis, empty the Celery
    queues; one line each."""
    from django.conf import settings

    print(remove_earlier_merchants().describe(), flush=True)
    if settings.REDIS_URL:  # the filesystem broker of the embedded default is the developer's own queue
        purged = purge_queues(settings.CELERY_TASK_QUEUE_NAMES)
        left = ", ".join(f"{name} {count:,}" for name, count in purged.items() if count) or "none"
        print(f"purged {sum(purged.values()):,} Celery messages left in the queues ({left})", flush=True)


def purge_queues(names: Iterable[str]) -> dict[str, int]:
    """Drop every message waiting in these queues of the broker; returns how many each held. The wake-up
    flags go too: the messages they said were waiting are gone (core.wakeup)."""
    from config.celery import app
    from core.wakeup import wake_flags_clear

    with app.connection_for_write() as connection:
        channel = connection.default_channel
        purged = {name: int(channel.queue_purge(name) or 0) for name in names}
    wake_flags_clear()
    return purged


def remove_earlier_merchants() -> Removed:
    """Delete every bench merchant with all its rows in one transaction."""
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from payments.models import Company

    started = time.perf_counter()
    candidates = get_user_model().objects.filter(
        username__startswith="bench-", username__endswith=f"@{BENCH_EMAIL_DOMAIN}"
    )
    owners = [pk for pk, username in candidates.values_list("pk", "username") if is_bench_email(username)]
    if not owners:
        return Removed(merchants=0)
    companies = list(Company.objects.filter(owner_id__in=owners).values_list("pk", flat=True))
    rows: dict[str, int] = {}
    with transaction.atomic():
        # No trigger or rule guards these tables (the ledger is append-only by payments.ledger, not by the
        # database), and every foreign key is NO ACTION, DEFERRABLE INITIALLY DEFERRED: plain DELETEs do,
        # and the order below (children first) holds at every statement anyway.
        for queryset in deletions(companies, owners):
            # One DELETE ... WHERE each, without Django's per-row collection (None: an empty `IN ()`).
            deleted = queryset._raw_delete(queryset.db) or 0
            table = queryset.model._meta.db_table
            rows[table] = rows.get(table, 0) + deleted
    # Vacuumed and analyzed before the first measurement (tools.bench.server.settle_database).
    return Removed(merchants=len(owners), rows=rows, seconds=time.perf_counter() - started)


def deletions(companies: Sequence[UUID], owners: Sequence[Any]) -> list[QuerySet[Any]]:
    """The DELETEs, in order: a row goes before every row it references (children before parents).

    `companies` are the bench companies, `owners` their users. Chain transactions and sessions are looked up
    here, before anything is deleted (the first by the withdrawals they pay, the second by decoding them).
    """
    from django.contrib.admin.models import LogEntry
    from django.contrib.auth import get_user_model

    from chains.models import ChainTx, DepositClaim, HouseEntry, UnroutedDeposit, UnroutedEvent
    from invoices.models import Invoice, InvoiceItem, UnderpaymentLimit
    from notifications.models import CompanySettings as NotificationSettings
    from notifications.models import KnownDevice, Notification, Preference
    from payments.models import (
        Account,
        ApiToken,
        Company,
        Deposit,
        DepositAddress,
        Invitation,
        LedgerEntry,
        Membership,
        QuarantinedTransfer,
        SandboxTransaction,
        StaticDepositAddress,
    )
    from security.models import AuditEvent, CompanySecurity, RecoveryCode, TotpDevice
    from webhooks.models import WebhookAttempt, WebhookEvent
    from withdrawals.models import (
        AutoWithdrawalRule,
        IdempotencyKey,
        PayoutAddress,
        PayoutDraft,
        PayoutLimit,
        PayoutPolicy,
        Withdrawal,
        WithdrawalCounter,
        WithdrawalRequest,
        WithdrawalTx,
    )

    user_model = get_user_model()
    events = WebhookEvent.objects.filter(company_id__in=companies)
    invoices = Invoice.objects.filter(company_id__in=companies)
    addresses = DepositAddress.objects.filter(company_id__in=companies)
    withdrawals = Withdrawal.objects.filter(company_id__in=companies)
    accounts = Account.objects.filter(company_id__in=companies)
    deposits = Deposit.objects.filter(
        Q(company_id__in=companies) | Q(deposit_address_id__in=addresses.values("pk"))
    )
    # The sandbox transfers to the bench addresses (the deposit ingestion's 5,000 a run, payments of its
    # invoices), matched as the scan routes them: by code, address (or its route key) and tag.
    paid_to_bench = SandboxTransaction.objects.filter(
        kind=SandboxTransaction.Kind.DEPOSIT,
    ).filter(
        Exists(
            addresses.filter(code=OuterRef("code"), tag=OuterRef("tag")).filter(
                Q(address=OuterRef("to_address")) | Q(route_key=OuterRef("to_address"))
            )
        )
    )
    # A broadcast of a bench withdrawal: its reference is the withdrawal's (Withdrawal.reference).
    paying_bench = SandboxTransaction.objects.filter(
        kind=SandboxTransaction.Kind.WITHDRAWAL,
        reference__in=withdrawals.annotate(
            ref=Concat(Value("withdrawal:"), "uid", output_field=CharField())
        ).values("ref"),
    )
    same_transfer = {"code": OuterRef("code"), "txid": OuterRef("txid")}
    quarantined = QuarantinedTransfer.objects.filter(
        Exists(paid_to_bench.filter(**same_transfer))
        | Exists(deposits.filter(**same_transfer, output_index=OuterRef("output_index")))
    )
    chain_txs = _owned_chain_txs(withdrawals)
    unrouted = UnroutedDeposit.objects.filter(
        Q(deposit_id__in=deposits.values("pk")) | Q(assigned_to_id__in=addresses.values("pk"))
    )
    return [
        WebhookAttempt.objects.filter(event_id__in=events.values("pk")),
        events,
        quarantined,
        paid_to_bench,
        paying_bench,
        UnroutedEvent.objects.filter(unrouted_id__in=unrouted.values("pk")),
        unrouted,
        DepositClaim.objects.filter(company_id__in=companies),
        deposits,
        InvoiceItem.objects.filter(invoice_id__in=invoices.values("pk")),
        invoices,  # before the addresses: an invoice holds its own
        StaticDepositAddress.objects.filter(
            Q(company_id__in=companies) | Q(deposit_address_id__in=addresses.values("pk"))
        ),
        addresses,
        HouseEntry.objects.filter(chain_tx_id__in=chain_txs),
        WithdrawalTx.objects.filter(
            Q(withdrawal_id__in=withdrawals.values("pk")) | Q(chain_tx_id__in=chain_txs)
        ),
        # Replacements and children with what they replaced, in one statement (checked at its end).
        ChainTx.objects.filter(pk__in=chain_txs),
        withdrawals,
        WithdrawalRequest.objects.filter(company_id__in=companies),
        WithdrawalCounter.objects.filter(company_id__in=companies),
        IdempotencyKey.objects.filter(company_id__in=companies),
        AutoWithdrawalRule.objects.filter(company_id__in=companies),
        UnderpaymentLimit.objects.filter(company_id__in=companies),
        *(
            model.objects.filter(company_id__in=companies)
            for model in (PayoutPolicy, PayoutLimit, PayoutAddress, PayoutDraft, ApiToken, AuditEvent)
        ),
        *(
            model.objects.filter(company_id__in=companies)
            for model in (Notification, NotificationSettings, CompanySecurity, Invitation, Membership)
        ),
        LedgerEntry.objects.filter(account_id__in=accounts.values("pk")),
        accounts,
        Company.objects.filter(pk__in=companies),
        TotpDevice.objects.filter(user_id__in=owners),
        RecoveryCode.objects.filter(user_id__in=owners),
        Preference.objects.filter(user_id__in=owners),
        KnownDevice.objects.filter(user_id__in=owners),
        *_sessions(owners),
        LogEntry.objects.filter(user_id__in=owners),
        *_many_to_many(user_model, owners),  # groups, user_permissions
        user_model._default_manager.filter(pk__in=owners),
    ]


def _owned_chain_txs(withdrawals: QuerySet[Any]) -> list[int]:
    """The payout transactions of bench withdrawals that pay no other withdrawal, with the transactions
    that replaced or sped them up (a CPFP child pays none itself). The sandbox pays one withdrawal per
    transaction and no bench kind runs the payout worker, so this is usually nothing."""
    from chains.models import ChainTx
    from withdrawals.models import WithdrawalTx

    bench = withdrawals.values("pk")
    linked = WithdrawalTx.objects.filter(chain_tx_id=OuterRef("pk"), withdrawal_id__in=bench)
    others = WithdrawalTx.objects.filter(chain_tx_id=OuterRef("pk")).exclude(withdrawal_id__in=bench)
    owned = set(ChainTx.objects.filter(Exists(linked)).exclude(Exists(others)).values_list("pk", flat=True))
    frontier = set(owned)
    while frontier:
        frontier = set(
            ChainTx.objects.filter(replaces_id__in=frontier)
            .exclude(pk__in=owned)
            .exclude(Exists(others))
            .values_list("pk", flat=True)
        )
        owned |= frontier
    return sorted(owned)


def _many_to_many(model: type[Model], pks: Sequence[Any]) -> list[QuerySet[Any]]:
    """The rows of `model`'s many-to-many tables that link the rows `pks`."""
    links = []
    for m2m in model._meta.many_to_many:
        through = m2m.remote_field.through
        assert through is not None, f"{m2m} has its table"
        links.append(through._default_manager.filter(**{f"{m2m.m2m_field_name()}__in": pks}))  # type: ignore[attr-defined]
    return links


def _sessions(owners: Sequence[Any]) -> list[QuerySet[Any]]:
    """The database sessions of the bench owners (a bench merchant has no password, so usually none):
    the user id is only inside the encoded session data, so each session is decoded."""
    from django.apps import apps
    from django.contrib.auth import SESSION_KEY

    if not apps.is_installed("django.contrib.sessions"):
        return []
    from django.contrib.sessions.models import Session

    wanted = {str(pk) for pk in owners}
    keys = [
        session.session_key
        for session in Session.objects.iterator()
        if str(session.get_decoded().get(SESSION_KEY)) in wanted  # {} when it cannot be decoded
    ]
    return [Session.objects.filter(session_key__in=keys)]

"""`Idempotency-Key` for POST /api/transactions/withdraw (docs/decisions.md).

Insert first: the key row is inserted (claimed) in its own short transaction before anything executes, so
the unique (company, key) constraint picks exactly one executor among concurrent identical requests. The
executor stores the response inside the transaction that creates the withdrawals (`Claim.store`), so a
stored response means the withdrawals committed, and a crash before commit leaves only the claim, with no
effect. The others wait (up to IDEMPOTENCY_WAIT_SECONDS) for the stored response and replay it; past the
wait they get 409 `idempotency_in_progress` and may retry.

- Same key, same body: the first response (status and body), replayed; header `Idempotent-Replayed: true`.
- Same key, other body (method, path and canonical JSON compared): 409 `idempotency_conflict`.
- Only a 200 is stored. A refused request (400) had no effect, so its claim is released and a retry with
  the same key runs again (e.g. after the balance was topped up).
- A claim left by a process that died (older than IDEMPOTENCY_LEASE_SECONDS, no response) is taken over;
  the token check in `store` makes sure only one of two executors can ever store (and so commit).
- Keys older than IDEMPOTENCY_TTL_HOURS (24) are ignored and purged by beat.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from core import jsonutil
from core.errors import DomainError, FieldError, IdempotencyConflict, ValidationFailed
from payments.models import Company
from withdrawals.models import IdempotencyKey

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 255
# Printable ASCII, as idempotency_key_check takes it; the document leaves out a space at either end, which
# HTTP servers and clients strip from a header value.
KEY_PATTERN = r"^[!-~](?:[ -~]*[!-~])?$"
_POLL_SECONDS = 0.05


class IdempotencyInProgress(DomainError):
    status = 409
    code = "idempotency_in_progress"
    default_detail = "A request with this Idempotency-Key is still being processed; retry shortly."


@dataclass(frozen=True)
class StoredResponse:
    status: int
    body: Any


@dataclass(frozen=True)
class Claim:
    """This request executes the key. `store` inside the executing transaction, `release` if it fails."""

    pk: int
    token: uuid.UUID

    def store(self, status: int, body: Any) -> None:
        # The UPDATE takes the row lock; a lost claim (taken over after the lease) matches no row, and the
        # exception rolls the caller's transaction back, so two executors can never both commit.
        stored = IdempotencyKey.objects.filter(
            pk=self.pk, claim_token=self.token, status_code__isnull=True
        ).update(status_code=status, response_body=jsonutil.dumps(body))
        if stored != 1:
            raise IdempotencyInProgress()

    def release(self) -> None:
        IdempotencyKey.objects.filter(pk=self.pk, claim_token=self.token, status_code__isnull=True).delete()

    @contextmanager
    def released_on_error(self) -> Iterator[None]:
        try:
            yield
        except BaseException:
            self.release()
            raise


def idempotency_key_check(raw: str | None) -> str | None:
    """The header's key, None when absent; 1 to 255 printable ASCII characters, else 400."""
    if raw is None:
        return None
    if not 1 <= len(raw) <= MAX_KEY_LENGTH or not all(" " <= char <= "~" for char in raw):
        raise ValidationFailed(
            [FieldError(HEADER, "invalid", f"must be 1 to {MAX_KEY_LENGTH} printable ASCII characters")]
        )
    return raw


def _number_key(value: Decimal) -> str:
    """One spelling per number (10, 10.0 and 1E+1 alike) for any parsed number, huge or not: never raises."""
    if not value.is_finite() or value.is_zero():
        return str(value) if not value.is_finite() else "0"
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    coefficient = text.rstrip("0")
    return f"{'-' if sign else ''}{coefficient}E{exponent + len(text) - len(coefficient)}"


def _canonical(value: Any) -> str:
    """Canonical JSON-like text: keys sorted, numbers by value, strings quoted (so never a number)."""
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda item: str(item[0]))
        return "{" + ",".join(f"{json.dumps(str(key))}:{_canonical(item)}" for key, item in items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_canonical(item) for item in value) + "]"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | Decimal):
        return _number_key(Decimal(value))
    return json.dumps(str(value), ensure_ascii=False)


def request_fingerprint(method: str, path: str, data: Any) -> str:
    """Key order and number spelling (10.50 vs 10.5) do not count; anything else does. Any body the parser
    accepted has a fingerprint (a number too large to write out too), so a bad body gets its 400."""
    text = f"{method.upper()} {path}\n{_canonical(data)}"
    return hashlib.sha256(text.encode()).hexdigest()


def idempotency_claim(*, company: Company, key: str, fingerprint: str) -> Claim | StoredResponse:
    """Claim the key (this request executes), or the stored response to replay; waits while another
    request holds it, up to IDEMPOTENCY_WAIT_SECONDS. Must not run inside a transaction: others must see
    the claim at once."""
    deadline = time.monotonic() + settings.IDEMPOTENCY_WAIT_SECONDS
    while True:
        outcome = _try_claim(company, key, fingerprint)
        if outcome is not None:
            return outcome
        if time.monotonic() >= deadline:
            raise IdempotencyInProgress()
        time.sleep(_POLL_SECONDS)


def _try_claim(company: Company, key: str, fingerprint: str) -> Claim | StoredResponse | None:
    for _ in range(3):  # a row that vanishes (released, expired) between our insert and read: try again
        now = timezone.now()
        token = uuid.uuid4()
        try:
            with transaction.atomic():
                row = IdempotencyKey.objects.create(
                    company=company, key=key, request_hash=fingerprint, claim_token=token, claimed_at=now
                )
            return Claim(row.pk, token)
        except IntegrityError:
            pass  # taken: on PostgreSQL our insert waited until the holder's insert committed
        existing = IdempotencyKey.objects.filter(company=company, key=key).first()
        if existing is None:
            continue
        if existing.created_at <= now - timedelta(hours=settings.IDEMPOTENCY_TTL_HOURS):
            IdempotencyKey.objects.filter(pk=existing.pk, created_at=existing.created_at).delete()
            continue
        if existing.request_hash != fingerprint:
            raise IdempotencyConflict()
        if existing.status_code is not None:
            return StoredResponse(existing.status_code, jsonutil.loads(existing.response_body))
        if existing.claimed_at <= now - timedelta(seconds=settings.IDEMPOTENCY_LEASE_SECONDS):
            taken = IdempotencyKey.objects.filter(
                pk=existing.pk, claim_token=existing.claim_token, status_code__isnull=True
            ).update(claim_token=token, claimed_at=now)
            if taken:
                return Claim(existing.pk, token)
            continue
        return None  # another request is executing it right now
    return None


def idempotency_keys_purge() -> int:
    """Beat: drop keys past their 24 h; returns how many."""
    cutoff = timezone.now() - timedelta(hours=settings.IDEMPOTENCY_TTL_HOURS)
    deleted, _ = IdempotencyKey.objects.filter(created_at__lt=cutoff).delete()
    return deleted

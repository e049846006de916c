"""Idempotency-Key on POST /api/transactions/withdraw (docs/decisions.md)."""

import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import override_settings
from django.utils import timezone

from payments.models import SandboxTransaction
from tests.chain import fund
from withdrawals.idempotency import Claim, IdempotencyInProgress, idempotency_keys_purge, request_fingerprint
from withdrawals.models import IdempotencyKey, Withdrawal
from withdrawals.rules import WithdrawalItem
from withdrawals.services import withdrawal_request
from withdrawals.tests.conftest import ADDRESSES, WITHDRAW, balance, client_for, item, withdraw

pytestmark = pytest.mark.django_db


def _key(value):
    return {"Idempotency-Key": value}


def test_the_same_key_and_body_replays_the_first_response_without_executing_again(api, funded):
    first = withdraw(api, item(), item(amount="0.002"), headers=_key("order-42"))

    second = withdraw(api, item(), item(amount="0.002"), headers=_key("order-42"))

    assert first.status_code == second.status_code == 200
    assert second.json() == first.json()
    assert second.content == first.content
    assert second["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    assert Withdrawal.objects.count() == 2
    assert balance(funded.company, "btc") == (Decimal("0.9968"), Decimal("0.0032"))


def test_key_order_and_number_spelling_do_not_make_another_body(api, funded):
    first = api.post(
        WITHDRAW,
        {"items": [{"asset": "btc", "amount": "0.0010", "to": ADDRESSES["btc"]}]},
        format="json",
        headers=_key("k"),
    )

    second = api.post(
        WITHDRAW,
        {"items": [{"to": ADDRESSES["btc"], "amount": "0.0010", "asset": "btc"}]},
        format="json",
        headers=_key("k"),
    )

    assert second.json() == first.json()
    assert Withdrawal.objects.count() == 1


def test_the_same_key_with_another_body_is_409_and_executes_nothing(api, funded):
    withdraw(api, item(), headers=_key("order-42"))

    response = withdraw(api, item(amount="0.003"), headers=_key("order-42"))

    assert response.status_code == 409
    assert response.json()["code"] == "idempotency_conflict"
    assert Withdrawal.objects.count() == 1


def test_without_a_key_every_call_executes(api, funded):
    withdraw(api, item())
    withdraw(api, item())

    assert Withdrawal.objects.count() == 2


def test_keys_belong_to_one_merchant(api, funded, other_merchant):
    fund(other_merchant.company, "btc", "1")

    mine = withdraw(api, item(), headers=_key("shared"))
    theirs = withdraw(client_for(other_merchant), item(), headers=_key("shared"))

    assert mine.status_code == theirs.status_code == 200
    assert mine.json()[0]["uid"] != theirs.json()[0]["uid"]
    assert Withdrawal.objects.count() == 2


@pytest.mark.parametrize(
    ("key", "status"), [("k" * 255, 200), ("k" * 256, 400), ("", 400), ("tab\tkey", 400)]
)
def test_keys_are_1_to_255_printable_characters(api, funded, key, status):
    response = withdraw(api, item(), headers=_key(key))

    assert response.status_code == status
    if status == 400:
        assert response.json()["errors"][0]["field"] == "Idempotency-Key"
        assert Withdrawal.objects.count() == 0


def test_a_refused_request_is_not_stored_so_the_same_key_runs_again_later(api, merchant):
    fund(merchant.company, "btc", "0.0005")
    refused = withdraw(api, item(), headers=_key("retry-me"))
    fund(merchant.company, "btc", "0.001")

    accepted = withdraw(api, item(), headers=_key("retry-me"))

    assert refused.status_code == 400 and refused.json()["code"] == "insufficient_balance"
    assert accepted.status_code == 200
    assert Withdrawal.objects.count() == 1
    assert IdempotencyKey.objects.get().status_code == 200


def test_a_key_older_than_24_hours_is_ignored(api, funded):
    first = withdraw(api, item(), headers=_key("daily"))
    IdempotencyKey.objects.update(created_at=timezone.now() - timedelta(hours=24, seconds=1))

    again = withdraw(api, item(amount="0.002"), headers=_key("daily"))

    assert again.status_code == 200
    assert again.json()[0]["uid"] != first.json()[0]["uid"]
    assert IdempotencyKey.objects.count() == 1


def test_purge_drops_keys_past_24_hours(funded):
    now = timezone.now()
    for age, key in ((timedelta(hours=25), "old"), (timedelta(hours=1), "new")):
        row = IdempotencyKey.objects.create(
            company=funded.company, key=key, request_hash="x", claim_token=uuid.uuid4(), claimed_at=now
        )
        IdempotencyKey.objects.filter(pk=row.pk).update(created_at=now - age)

    deleted = idempotency_keys_purge()

    assert deleted == 1
    assert list(IdempotencyKey.objects.values_list("key", flat=True)) == ["new"]


def _claim_in_progress(company, key, body, claimed_at):
    return IdempotencyKey.objects.create(
        company=company,
        key=key,
        request_hash=request_fingerprint("POST", WITHDRAW, body),
        claim_token=uuid.uuid4(),
        claimed_at=claimed_at,
    )


@override_settings(IDEMPOTENCY_WAIT_SECONDS=0.2)
def test_a_key_still_executing_elsewhere_is_409_in_progress_after_the_wait(api, funded):
    body = {"items": [item()]}
    _claim_in_progress(funded.company, "busy", body, claimed_at=timezone.now())

    response = api.post(WITHDRAW, body, format="json", headers=_key("busy"))

    assert response.status_code == 409
    assert response.json()["code"] == "idempotency_in_progress"
    assert Withdrawal.objects.count() == 0


def test_a_claim_abandoned_past_its_lease_is_taken_over(api, funded):
    body = {"items": [item()]}
    _claim_in_progress(funded.company, "orphan", body, claimed_at=timezone.now() - timedelta(minutes=2))

    response = api.post(WITHDRAW, body, format="json", headers=_key("orphan"))
    replay = api.post(WITHDRAW, body, format="json", headers=_key("orphan"))

    assert response.status_code == 200
    assert replay.json() == response.json()
    assert Withdrawal.objects.count() == 1


def test_an_executor_that_lost_its_claim_cannot_commit(funded):
    body = {"items": [item()]}
    row = _claim_in_progress(funded.company, "lost", body, claimed_at=timezone.now())
    stale = Claim(row.pk, uuid.uuid4())  # another request took the claim over meanwhile

    with pytest.raises(IdempotencyInProgress):
        withdrawal_request(
            company=funded.company,
            items=[WithdrawalItem(asset="btc", to=ADDRESSES["btc"], amount=Decimal("0.001"))],
            on_accepted=lambda accepted: stale.store(200, []),
        )

    assert Withdrawal.objects.count() == 0
    assert balance(funded.company, "btc") == (Decimal(1), Decimal(0))
    assert not SandboxTransaction.objects.exists()

"""chains.near.policy reads the borsh transaction it is asked to sign and approves only a processing
withdrawal's payout from the hot account with the hot key (one Transfer of exactly its address and amount)
or the sweep of an open deposit account of the signer's own pool (one DeleteAccount into the hot account,
signed by that account's pool key); anything else is refused with the reason."""

from __future__ import annotations

import base64
import json
from decimal import Decimal

import pytest

from chains.derivation import DEVELOPMENT_MNEMONIC
from chains.models import Sweep
from chains.near import keys, transaction
from chains.near.policy import MAX_INDEX, NearRules, SignRefused, check, signing_request
from chains.near.transaction import DeleteAccount, Transaction, Transfer
from chains.near.units import to_yocto
from tests.factories import WithdrawalFactory

SEED = keys.seed_of(DEVELOPMENT_MNEMONIC)
HOT_KEY = keys.hot_key(SEED)[1]
HOT = transaction.implicit_account(HOT_KEY)
RULES = NearRules(code="near", account=HOT)
BLOCK = bytes(range(32))
PAYEE = "payee.near"
AMOUNT = Decimal("12.5")
YOCTO = to_yocto(AMOUNT)


def pool(index: int) -> bytes:
    return keys.pool_key(SEED, index)[1]


def account(index: int) -> str:
    return transaction.implicit_account(pool(index))


def approve(payload: str, rules: NearRules = RULES):
    return check("near", payload, rules, HOT_KEY, pool)


def payout_tx(
    *actions, to: str = PAYEE, signer: str = HOT, key: bytes = HOT_KEY, nonce: int = 7
) -> Transaction:
    return Transaction(signer, key, nonce, to, BLOCK, actions or (Transfer(YOCTO),))


def sweep_tx(
    index: int, *actions, key: bytes | None = None, to: str | None = None, nonce: int = 9
) -> Transaction:
    source = account(index)
    return Transaction(
        source, key or pool(index), nonce, to or source, BLOCK, actions or (DeleteAccount(HOT),)
    )


def open_sweep(index: int, status: str = Sweep.Status.READY) -> Sweep:
    return Sweep.objects.create(
        code="near", address=account(index), derivation_index=index, amount=Decimal("1"), status=status
    )


@pytest.fixture
def withdrawal(db):
    return WithdrawalFactory(asset="near", to=PAYEE, amount=AMOUNT)


# --- what is approved --------------------------------------------------------------------------------------


def test_the_stored_payout_from_the_hot_account_is_approved(withdrawal):
    tx = payout_tx()

    approved = approve(signing_request("payout", tx, ref=withdrawal.reference))

    assert (approved.tx, approved.index, approved.ref, approved.amount) == (
        tx,
        None,
        withdrawal.reference,
        AMOUNT,
    )


def test_the_sweep_of_an_open_deposit_account_into_the_hot_account_is_approved(db):
    open_sweep(3)
    tx = sweep_tx(3)

    approved = approve(signing_request("sweep", tx, index=3))

    assert (approved.tx, approved.index, approved.amount) == (tx, 3, Decimal(0))


# --- what is refused ---------------------------------------------------------------------------------------

PAYOUT_FORGERIES = {
    "to another address": (lambda: payout_tx(to="attacker.near"), "pays attacker.near, not withdrawal"),
    "one yocto more": (lambda: payout_tx(Transfer(YOCTO + 1)), f"pays {YOCTO + 1} yoctoNEAR, not"),
    "one yocto less": (lambda: payout_tx(Transfer(YOCTO - 1)), f"pays {YOCTO - 1} yoctoNEAR, not"),
    "two transfers": (
        lambda: payout_tx(Transfer(YOCTO), Transfer(1)),
        "exactly one Transfer, not Transfer, T",
    ),
    "a transfer and a delete": (
        lambda: payout_tx(Transfer(YOCTO), DeleteAccount("attacker.near")),
        "exactly one Transfer, not Transfer, DeleteAccount into attacker.near",
    ),
    "a DeleteAccount": (
        lambda: payout_tx(DeleteAccount("attacker.near")),
        "exactly one Transfer, not DeleteAccount",
    ),
    "by another account with the hot key": (
        lambda: payout_tx(signer="other.near"),
        f"signed by the hot account {HOT}, not other.near",
    ),
    "by the hot account with a pool key": (lambda: payout_tx(key=pool(0)), "with the signer's hot key"),
    "from a deposit account": (
        lambda: payout_tx(signer=account(0), key=pool(0)),
        f"signed by the hot account {HOT}, not {account(0)}",
    ),
    "nonce 0": (lambda: payout_tx(nonce=0), "nonce 0 is never valid"),
}


@pytest.mark.parametrize("forgery", PAYOUT_FORGERIES.values(), ids=PAYOUT_FORGERIES.keys())
def test_a_payout_unlike_the_stored_withdrawal_is_refused(withdrawal, forgery):
    build, reason = forgery

    with pytest.raises(SignRefused, match=reason):
        approve(signing_request("payout", build(), ref=withdrawal.reference))


SWEEP_FORGERIES = {
    "into another beneficiary": (lambda: sweep_tx(3, DeleteAccount("attacker.near")), "into the hot account"),
    "signed for the account of another index": (
        lambda: sweep_tx(4),
        f"index 3 is signed by and sent to its deposit account {account(3)}, not {account(4)}",
    ),
    "sent to the hot account": (lambda: sweep_tx(3, to=HOT), f"not {account(3)} to {HOT}"),
    "with the hot key": (lambda: sweep_tx(3, key=HOT_KEY), "signed with pool key 3, not another"),
    "as a transfer": (lambda: sweep_tx(3, Transfer(5)), "exactly one DeleteAccount .* not Transfer"),
    "with a transfer first": (
        lambda: sweep_tx(3, Transfer(5), DeleteAccount(HOT)),
        "exactly one DeleteAccount",
    ),
    "nonce 0": (lambda: sweep_tx(3, nonce=0), "nonce 0 is never valid"),
}


@pytest.mark.parametrize("forgery", SWEEP_FORGERIES.values(), ids=SWEEP_FORGERIES.keys())
def test_a_sweep_other_than_deleting_its_own_account_into_the_hot_account_is_refused(db, forgery):
    open_sweep(3)
    open_sweep(4)
    build, reason = forgery

    with pytest.raises(SignRefused, match=reason):
        approve(signing_request("sweep", build(), index=3))


@pytest.mark.parametrize("status", [Sweep.Status.DONE, Sweep.Status.FAILED, Sweep.Status.TOPUP, None])
def test_a_sweep_of_an_account_without_an_open_sweep_is_refused(db, status):
    if status is not None:
        open_sweep(3, status)

    with pytest.raises(SignRefused, match=f"no sweep of {account(3)} \\(index 3\\) is open"):
        approve(signing_request("sweep", sweep_tx(3), index=3))


@pytest.mark.parametrize("index", [-1, MAX_INDEX + 1, True, "3", None, 3.0])
def test_a_sweep_index_outside_the_pool_is_refused(db, index):
    payload = json.dumps({"purpose": "sweep", "tx": _b64(sweep_tx(3).encode()), "index": index})

    with pytest.raises(SignRefused, match="names a pool index from 0 to 2147483647"):
        approve(payload)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


MALFORMED = {
    "unknown purpose": (
        {"purpose": "transfer", "tx": _b64(payout_tx().encode())},
        "unknown purpose 'transfer'",
    ),
    "no purpose": ({"tx": _b64(payout_tx().encode())}, "unknown purpose None"),
    "garbage base64": ({"purpose": "payout", "tx": "not*base64!", "ref": "w"}, "is not base64"),
    "no tx": ({"purpose": "payout", "ref": "w"}, "borsh bytes in base64"),
    "a bare hash": (
        {"purpose": "payout", "tx": _b64(payout_tx().hash()), "ref": "w"},
        "the transaction cannot be read",
    ),
    "trailing bytes": (
        {"purpose": "payout", "tx": _b64(payout_tx().encode() + b"\0"), "ref": "w"},
        "1 trailing bytes after the transaction",
    ),
    "a function call": (
        {"purpose": "payout", "tx": _b64(payout_tx().encode()[:-17] + b"\x02"), "ref": "w"},
        "tag 2 \\(FunctionCall\\)",
    ),
    "an index in a payout": (
        {"purpose": "payout", "tx": _b64(payout_tx().encode()), "ref": "w", "index": 0},
        "a payout request has no index",
    ),
    "a signer_id in a sweep": (
        {"purpose": "sweep", "tx": _b64(sweep_tx(3).encode()), "index": 3, "account": HOT},
        "a sweep request has no account",
    ),
    "no ref": ({"purpose": "payout", "tx": _b64(payout_tx().encode())}, "names its withdrawal"),
    "an unknown withdrawal": (
        {"purpose": "payout", "tx": _b64(payout_tx().encode()), "ref": "withdrawal:nope"},
        "no withdrawal 'withdrawal:nope' of near",
    ),
}


@pytest.mark.parametrize("request_", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_request_is_refused(withdrawal, request_):
    body, reason = request_

    with pytest.raises(SignRefused, match=reason):
        approve(json.dumps(body))


@pytest.mark.parametrize("payload", ["not json", "[1, 2]", '"payout"'])
def test_a_request_that_is_no_json_object_is_refused(payload):
    with pytest.raises(SignRefused, match="a request is a JSON object"):
        approve(payload)


def test_a_finished_withdrawal_or_one_over_the_payout_limit_is_refused(db):
    rejected = WithdrawalFactory(asset="near", to=PAYEE, amount=AMOUNT, status="rejected")
    processing = WithdrawalFactory(asset="near", to=PAYEE, amount=AMOUNT)

    with pytest.raises(SignRefused, match="is rejected, not processing"):
        approve(signing_request("payout", payout_tx(), ref=rejected.reference))
    with pytest.raises(SignRefused, match=r"12\.5 near is over the payout limit 12"):
        limited = NearRules(code="near", account=HOT, payout_limit=Decimal(12))
        approve(signing_request("payout", payout_tx(), ref=processing.reference), limited)


def test_a_named_hot_account_signs_its_payouts_and_receives_the_sweeps(db):
    rules = NearRules(code="near", account="shop.near")
    withdrawal = WithdrawalFactory(asset="near", to=PAYEE, amount=AMOUNT)
    open_sweep(3)

    approve(signing_request("payout", payout_tx(signer="shop.near"), ref=withdrawal.reference), rules)
    approve(signing_request("sweep", sweep_tx(3, DeleteAccount("shop.near")), index=3), rules)
    with pytest.raises(SignRefused, match=r"signed by the hot account shop\.near"):
        approve(signing_request("payout", payout_tx(), ref=withdrawal.reference), rules)
    with pytest.raises(SignRefused, match=r"into the hot account shop\.near"):
        approve(signing_request("sweep", sweep_tx(3), index=3), rules)


def test_the_rules_of_another_code_are_refused():
    with pytest.raises(SignRefused, match="the rules of ton are not those of near"):
        approve(signing_request("payout", payout_tx(), ref="w"), NearRules(code="ton", account=HOT))

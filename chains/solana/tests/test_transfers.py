"""What a transaction paid to an address, read from recorded answers: the exact balance delta, the senders of
the top-level transfers, the Solana Pay references, the memos; a failed transaction and an outgoing one
pay nothing; Agave's memo field read back whole."""

from __future__ import annotations

import pytest

from chains.solana.results import ConfirmedTransaction
from chains.solana.tests import recorded
from chains.solana.tests.recorded import (
    CUSTOMER,
    FAILED_LEGACY,
    MERCHANT,
    OTHER,
    PROGRAM_PAYMENT,
    REFERENCE,
    SIG1,
    SOLANA_PAY_V0,
    VAULT,
    changed,
)
from chains.solana.transfers import UnreadableTransaction, memo_texts, memos, received


def test_a_solana_pay_payment() -> None:
    transaction = ConfirmedTransaction.parse(SOLANA_PAY_V0)

    paid = received(transaction, MERCHANT)

    assert paid is not None
    assert (paid.signature, paid.slot, paid.block_time) == (SIG1, 341_279_800, 1_750_000_123)
    assert paid.lamports == 250_000_000
    assert paid.senders == (CUSTOMER,)
    assert paid.references == (REFERENCE,)
    assert paid.memos == ("kassa:inv_8XK2",)


def test_a_payment_by_a_program_counts_by_its_balance_delta() -> None:
    transaction = ConfirmedTransaction.parse(PROGRAM_PAYMENT)

    paid = received(transaction, MERCHANT)

    # The merchant's key is loaded from a lookup table (writable), after the static keys.
    assert transaction.account_keys.index(MERCHANT) == 3 and transaction.is_writable(3)
    assert paid is not None and paid.lamports == 1_000_000
    assert paid.senders == () and paid.references == () and paid.memos == ()  # no top-level transfer
    assert received(transaction, VAULT) is None  # it paid, it did not receive


def test_a_failed_transaction_paid_nothing() -> None:
    transaction = ConfirmedTransaction.parse(FAILED_LEGACY)

    assert transaction.version == "legacy" and transaction.meta is not None
    assert transaction.meta.err == {"InstructionError": [0, {"Custom": 1}]}
    assert received(transaction, MERCHANT) is None
    assert received(transaction, OTHER) is None


def test_nothing_for_an_address_the_transaction_does_not_name() -> None:
    assert received(ConfirmedTransaction.parse(SOLANA_PAY_V0), OTHER) is None


def test_a_writable_or_signing_extra_key_is_no_reference() -> None:
    # The customer (a signer) and the merchant (writable) appended to the transfer too.
    answer = changed(SOLANA_PAY_V0, "transaction.message.instructions.3.accounts", [0, 1, 0, 1, 5])

    paid = received(ConfirmedTransaction.parse(answer), MERCHANT)

    assert paid is not None and paid.references == (REFERENCE,)


def test_without_meta_the_amount_cannot_be_known() -> None:
    transaction = ConfirmedTransaction.parse(changed(SOLANA_PAY_V0, "meta", None))

    with pytest.raises(UnreadableTransaction):
        received(transaction, MERCHANT)


def test_memos_in_order() -> None:
    answer = changed(
        SOLANA_PAY_V0,
        "transaction.message.instructions.1",
        {"accounts": [], "data": recorded.MEMO_DATA, "programIdIndex": 4, "stackHeight": None},
    )

    assert memos(ConfirmedTransaction.parse(answer)) == ("kassa:inv_8XK2", "kassa:inv_8XK2")


@pytest.mark.parametrize(
    ("field", "texts"),
    [
        (None, ()),
        ("[14] kassa:inv_8XK2", ("kassa:inv_8XK2",)),
        ("[5] hello; [3] abc", ("hello", "abc")),
        ("[8] a; [1] b; [1] c", ("a; [1] b", "c")),  # a memo holding "; " stays whole
        ("[18] order 42 — café", ("order 42 — café",)),  # the length is the bytes'
        ("[0] ", ("",)),
        ("[2] (unparseable); [2] ok", ("(unparseable)", "ok")),
    ],
)
def test_agaves_memo_field_is_read_back_whole(field: str | None, texts: tuple[str, ...]) -> None:
    assert memo_texts(field) == texts


@pytest.mark.parametrize(
    "field", ["hello", "[5]hello", "[x] hello", "[6] hello", "[4] hello", "[2] é; ", "[1] a;[1] b"]
)
def test_what_is_not_agaves_memo_field_is_refused(field: str) -> None:
    with pytest.raises(ValueError):
        memo_texts(field)

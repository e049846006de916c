"""The NEAR codec against near-api-js's published bytes, nearcore's account-id lists and RFC 8032."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chains.near import transaction as near
from chains.near.tests import vectors
from chains.near.transaction import (
    DeleteAccount,
    NearCodecError,
    Transaction,
    Transfer,
    b58decode,
    b58encode,
    decode_signed,
    encode_action,
    implicit_account,
    is_implicit,
    parse_public_key,
    public_key_text,
    sign,
    verify,
)

TRANSFER = bytes.fromhex(vectors.TRANSFER_HEX)
SIGNED_TRANSFER = bytes.fromhex(vectors.SIGNED_TRANSFER_HEX)
MULTI_ACTION = bytes.fromhex(vectors.MULTI_ACTION_HEX)
ACTION_TAG_AT = len(TRANSFER) - 17  # the transfer vector ends with its one action: tag + u128
SIGNER_END = 4 + len("test.near")  # both near-api-js vectors are signed by test.near


def secret_seed(secret_key: str) -> bytes:
    """The 32-byte seed half of near-api-js's "ed25519:<base58 of seed + public key>" secret key."""
    return b58decode(secret_key.removeprefix("ed25519:"))[:32]


def transfer_tx() -> Transaction:
    return Transaction(
        signer_id=vectors.TRANSFER_SIGNER,
        public_key=b58decode(vectors.TRANSFER_PUBLIC_KEY),
        nonce=vectors.TRANSFER_NONCE,
        receiver_id=vectors.TRANSFER_RECEIVER,
        block_hash=b58decode(vectors.BLOCK_HASH),
        actions=(Transfer(vectors.TRANSFER_DEPOSIT),),
    )


def with_signer(raw: bytes, data: bytes = TRANSFER) -> bytes:
    return len(raw).to_bytes(4, "little") + raw + data[SIGNER_END:]


# --- published vectors -------------------------------------------------------------------------------


def test_transfer_encodes_to_near_api_js_bytes() -> None:
    assert transfer_tx().encode().hex() == vectors.TRANSFER_HEX


def test_transfer_vector_decodes_to_its_fields() -> None:
    assert Transaction.decode(TRANSFER) == transfer_tx()


def test_sign_gives_near_api_js_signed_transfer() -> None:
    signed = sign(transfer_tx(), secret_seed(vectors.TRANSFER_SECRET_KEY))

    assert signed.hex() == vectors.SIGNED_TRANSFER_HEX


def test_signed_vector_decodes_and_verifies() -> None:
    tx, signature = decode_signed(SIGNED_TRANSFER)

    assert tx == transfer_tx()
    assert base64.b64encode(signature).decode() == vectors.TRANSFER_SIGNATURE_BASE64
    assert verify(tx, signature)


@pytest.mark.parametrize("secret_key", [vectors.TRANSFER_SECRET_KEY, vectors.MULTI_ACTION_SECRET_KEY])
def test_near_api_js_secret_key_is_seed_then_public_key(secret_key: str) -> None:
    raw = b58decode(secret_key.removeprefix("ed25519:"))

    assert len(raw) == 64
    assert near.ed25519_public_key(raw[:32]) == raw[32:]


def test_txid_is_base58_of_sha256_of_borsh_as_near_api_js_states() -> None:
    # near-api-js's own hash for its multi-action vector; our decoder refuses that transaction, so the
    # rule is checked on the raw bytes and then Transaction.txid is held to the same rule.
    assert b58encode(hashlib.sha256(MULTI_ACTION).digest()) == vectors.MULTI_ACTION_TXID
    assert transfer_tx().txid() == b58encode(hashlib.sha256(TRANSFER).digest())
    assert transfer_tx().hash() == hashlib.sha256(TRANSFER).digest()


def test_multi_action_vector_is_refused_at_its_first_foreign_action() -> None:
    with pytest.raises(NearCodecError, match=r"action 0 has tag 0 \(CreateAccount\)"):
        Transaction.decode(MULTI_ACTION)


def test_multi_action_vector_supported_actions_encode_as_published() -> None:
    secret = b58decode(vectors.MULTI_ACTION_SECRET_KEY.removeprefix("ed25519:"))
    tx = Transaction("test.near", secret[32:], 1, "123", b58decode(vectors.BLOCK_HASH), (Transfer(1),))
    header = tx.encode()[: -4 - 17]  # everything before the actions Vec

    assert MULTI_ACTION.startswith(header)
    assert encode_action(Transfer(123)) in MULTI_ACTION
    assert MULTI_ACTION.endswith(encode_action(DeleteAccount("123")))


def test_function_call_vector_is_refused() -> None:
    data = bytes.fromhex(vectors.FUNCTION_CALL_HEX)

    with pytest.raises(NearCodecError, match="signer_id is 0 characters long"):
        Transaction.decode(data)
    # Given a valid signer it still stops, at the FunctionCall.
    with pytest.raises(NearCodecError, match=r"action 0 has tag 2 \(FunctionCall\)"):
        Transaction.decode((2).to_bytes(4, "little") + b"aa" + data[4:])


@pytest.mark.parametrize("account_id", vectors.NEARCORE_OK_ACCOUNT_IDS)
def test_nearcore_valid_account_ids_are_accepted(account_id: str) -> None:
    tx = Transaction.decode(with_signer(account_id.encode()))

    assert tx.signer_id == account_id
    assert DeleteAccount(account_id).beneficiary_id == account_id


@pytest.mark.parametrize("account_id", vectors.NEARCORE_BAD_ACCOUNT_IDS)
def test_nearcore_invalid_account_ids_are_refused(account_id: str) -> None:
    with pytest.raises(NearCodecError, match="signer_id"):
        Transaction.decode(with_signer(account_id.encode()))
    with pytest.raises(NearCodecError, match="beneficiary_id"):
        DeleteAccount(account_id)
    with pytest.raises(NearCodecError, match="receiver_id"):
        Transaction("aa", bytes(32), 0, account_id, bytes(32), (Transfer(1),))


_NEARCORE_REGEX = re.compile(r"^(([a-z\d]+[\-_])*[a-z\d]+\.)*([a-z\d]+[\-_])*[a-z\d]+$")


@given(st.text(alphabet="ab09-_.Z@ é", max_size=70))
def test_account_id_rule_is_nearcore_regex_and_length(text: str) -> None:
    # The regex nearcore's AccountId::validate documents as what its loop implements.
    expected = 2 <= len(text) <= 64 and _NEARCORE_REGEX.fullmatch(text) is not None

    assert near.is_account_id(text) is expected


def test_implicit_accounts() -> None:
    key = bytes(range(32))

    assert is_implicit(vectors.NEARCORE_IMPLICIT)
    assert implicit_account(key) == key.hex()
    assert is_implicit(implicit_account(key))
    assert not is_implicit(vectors.NEARCORE_IMPLICIT.upper())
    assert not is_implicit(vectors.NEARCORE_IMPLICIT[:-1])
    assert not is_implicit("alice.near")


# --- RFC 8032 through the ed25519 building blocks -----------------------------------------------------


@pytest.mark.parametrize(("secret", "public", "message", "signature"), vectors.RFC8032)
def test_rfc8032_vectors(secret: str, public: str, message: str, signature: str) -> None:
    seed, msg = bytes.fromhex(secret), bytes.fromhex(message)

    assert near.ed25519_public_key(seed).hex() == public
    assert near.ed25519_sign(seed, msg).hex() == signature
    assert near.ed25519_verify(bytes.fromhex(public), msg, bytes.fromhex(signature))
    assert not near.ed25519_verify(bytes.fromhex(public), msg + b"\x00", bytes.fromhex(signature))


def test_every_flipped_signature_bit_fails_verification() -> None:
    tx, signature = decode_signed(SIGNED_TRANSFER)

    for bit in range(512):
        flipped = bytearray(signature)
        flipped[bit // 8] ^= 1 << (bit % 8)
        assert not verify(tx, bytes(flipped)), bit


def test_signature_does_not_cover_another_transaction() -> None:
    tx, signature = decode_signed(SIGNED_TRANSFER)
    other = Transaction(tx.signer_id, tx.public_key, tx.nonce, tx.receiver_id, tx.block_hash, (Transfer(2),))

    assert not verify(other, signature)
    assert not verify(tx, signature[:63])


def test_sign_refuses_a_key_that_is_not_the_transactions() -> None:
    with pytest.raises(NearCodecError, match="does not belong"):
        sign(transfer_tx(), secret_seed(vectors.MULTI_ACTION_SECRET_KEY))


# --- strict decoding ----------------------------------------------------------------------------------


def test_every_truncation_is_refused() -> None:
    for end in range(len(TRANSFER)):
        with pytest.raises(NearCodecError):
            Transaction.decode(TRANSFER[:end])
    for end in range(len(SIGNED_TRANSFER)):
        with pytest.raises(NearCodecError):
            decode_signed(SIGNED_TRANSFER[:end])


def test_trailing_bytes_are_refused() -> None:
    with pytest.raises(NearCodecError, match="1 trailing bytes"):
        Transaction.decode(TRANSFER + b"\x00")
    with pytest.raises(NearCodecError, match="65 trailing bytes"):
        Transaction.decode(SIGNED_TRANSFER)
    with pytest.raises(NearCodecError, match="trailing"):
        decode_signed(SIGNED_TRANSFER + b"\x00")


@pytest.mark.parametrize("tag", [0, 1, 2, 4, 5, 6, 8, 9, 10, 11, 255])
def test_other_action_tags_are_refused(tag: int) -> None:
    data = bytearray(TRANSFER)
    data[ACTION_TAG_AT] = tag

    with pytest.raises(NearCodecError, match=f"action 0 has tag {tag} "):
        Transaction.decode(bytes(data))


def test_v1_transaction_is_refused() -> None:
    # nearcore writes TransactionV1 as 1u8 then its fields, the first a non-empty signer id.
    with pytest.raises(NearCodecError, match="TransactionV1"):
        Transaction.decode(b"\x01" + TRANSFER)


def test_non_ed25519_keys_are_refused() -> None:
    key = bytearray(TRANSFER)
    key[SIGNER_END] = 1
    signature = bytearray(SIGNED_TRANSFER)
    signature[len(TRANSFER)] = 1

    with pytest.raises(NearCodecError, match=r"public_key key type is 1 \(SECP256K1\)"):
        Transaction.decode(bytes(key))
    with pytest.raises(NearCodecError, match=r"signature key type is 1 \(SECP256K1\)"):
        decode_signed(bytes(signature))


def test_invalid_utf8_account_id_is_refused() -> None:
    with pytest.raises(NearCodecError, match="signer_id is not valid UTF-8"):
        Transaction.decode(with_signer(b"\xff\xfe"))


def test_an_empty_or_absurd_action_count_is_refused() -> None:
    empty = TRANSFER[: ACTION_TAG_AT - 4] + (0).to_bytes(4, "little")
    absurd = TRANSFER[: ACTION_TAG_AT - 4] + (2**32 - 1).to_bytes(4, "little") + TRANSFER[ACTION_TAG_AT:]

    with pytest.raises(NearCodecError, match="actions is empty"):
        Transaction.decode(empty)
    with pytest.raises(NearCodecError, match="4294967295 actions announced"):
        Transaction.decode(absurd)


@pytest.mark.parametrize("deposit", [2**128, -1, True, 1.0, "1"])
def test_deposit_outside_u128_or_not_an_int_is_refused(deposit: object) -> None:
    with pytest.raises(NearCodecError, match="Transfer deposit"):
        Transfer(deposit)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("nonce", 2**64),
        ("nonce", -1),
        ("public_key", bytes(33)),
        ("block_hash", bytes(31)),
        ("actions", ()),
        ("actions", [Transfer(1)]),
        ("actions", ("transfer",)),
    ],
)
def test_transaction_fields_are_checked_on_construction(field: str, value: object) -> None:
    with pytest.raises(NearCodecError, match=field):
        dataclasses.replace(transfer_tx(), **{field: value})  # type: ignore[arg-type]


def test_largest_values_round_trip() -> None:
    tx = Transaction("a" * 64, bytes(32), 2**64 - 1, "0" * 64, bytes(32), (Transfer(2**128 - 1),))

    assert Transaction.decode(tx.encode()) == tx


# --- round trips --------------------------------------------------------------------------------------

account_ids = st.one_of(
    st.from_regex(r"[a-z0-9]{1,8}([-_.][a-z0-9]{1,8}){0,5}", fullmatch=True).filter(near.is_account_id),
    st.binary(min_size=32, max_size=32).map(bytes.hex),
)
actions = st.one_of(
    st.integers(0, 2**128 - 1).map(Transfer),
    account_ids.map(DeleteAccount),
)


@st.composite
def transactions(draw: st.DrawFn, public_key: bytes | None = None) -> Transaction:
    return Transaction(
        signer_id=draw(account_ids),
        public_key=public_key if public_key is not None else draw(st.binary(min_size=32, max_size=32)),
        nonce=draw(st.integers(0, 2**64 - 1)),
        receiver_id=draw(account_ids),
        block_hash=draw(st.binary(min_size=32, max_size=32)),
        actions=tuple(draw(st.lists(actions, min_size=1, max_size=4))),
    )


@given(transactions())
def test_encode_decode_is_identity(tx: Transaction) -> None:
    assert Transaction.decode(tx.encode()) == tx


@given(st.binary(min_size=32, max_size=32), st.data())
def test_signed_round_trip_verifies(seed: bytes, data: st.DataObject) -> None:
    tx = data.draw(transactions(public_key=near.ed25519_public_key(seed)))

    decoded, signature = decode_signed(sign(tx, seed))

    assert decoded == tx
    assert verify(decoded, signature)


# --- base58 and key text ------------------------------------------------------------------------------


@given(st.binary(min_size=1, max_size=40))
def test_base58_round_trip(data: bytes) -> None:
    assert b58decode(b58encode(data)) == data


def test_base58_keeps_leading_zeros_and_refuses_other_alphabets() -> None:
    assert b58encode(b"\x00\x00\x01") == "112"
    with pytest.raises(NearCodecError, match="not base58"):
        b58decode("0OIl")


def test_public_key_text() -> None:
    key = b58decode(vectors.TRANSFER_PUBLIC_KEY)

    assert public_key_text(key) == "ed25519:" + vectors.TRANSFER_PUBLIC_KEY
    assert parse_public_key(public_key_text(key)) == key


@pytest.mark.parametrize(
    "text",
    [
        vectors.TRANSFER_PUBLIC_KEY,  # near-api-js accepts it bare; a configured key must say its type
        "secp256k1:" + vectors.TRANSFER_PUBLIC_KEY,
        "ed25519:",
        "ed25519:0OIl",
        vectors.TRANSFER_SECRET_KEY,  # 64 bytes: a secret key pasted where the public one goes
    ],
)
def test_parse_public_key_refuses_anything_else(text: str) -> None:
    with pytest.raises(NearCodecError):
        parse_public_key(text)

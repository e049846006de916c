"""NEAR transactions as the bytes nearcore signs and accepts: borsh, strictly, for the two actions Kassa uses.

Kassa only moves NEAR: a `Transfer` (a payout, a sweep) and a `DeleteAccount` (closing an emptied deposit
account and handing its storage deposit to a beneficiary). Every other action (function calls, keys,
contracts, stake, delegation) is refused both ways, so a decoded transaction can never carry something
the signer did not mean to sign.

Layout (borsh, little-endian, nearcore's `TransactionV0` as near-api-js's SCHEMA writes it):
    Transaction    signer_id string, public_key PublicKey, nonce u64, receiver_id string,
                   block_hash [u8; 32], actions Vec<Action>
    string         u32 byte length + UTF-8           Vec   u32 count + items
    PublicKey      u8 key type (0 = ed25519) + 32    Signature  u8 key type (0) + 64
    Action         u8 tag: 3 Transfer{deposit u128}, 7 DeleteAccount{beneficiary_id string}
    SignedTransaction = Transaction + Signature

NEAR signs sha256(borsh(Transaction)), not the bytes themselves, and that hash in base58 is the transaction
hash the RPC (`tx`, `send_tx`) and explorers show. Amounts are ints in yoctoNEAR (10**24 per NEAR).

The objects validate themselves on construction, so an invalid transaction can be neither built nor
decoded: decoding goes through the same constructors.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from bip_utils import Base58Decoder, Base58Encoder
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat


class NearCodecError(ValueError):
    """Bytes or values that are not a transaction Kassa would build; the message names the field."""


ED25519 = 0
_KEY_TYPES = {0: "ED25519", 1: "SECP256K1", 2: "MLDSA65"}
TRANSFER_TAG = 3
DELETE_ACCOUNT_TAG = 7
# nearcore's Action enum, for naming what was refused.
_ACTION_NAMES = (
    "CreateAccount",
    "DeployContract",
    "FunctionCall",
    "Transfer",
    "Stake",
    "AddKey",
    "DeleteKey",
    "DeleteAccount",
    "Delegate",
    "DeployGlobalContract",
    "UseGlobalContract",
)
U64_LIMIT = 2**64
U128_LIMIT = 2**128
KEY_PREFIX = "ed25519:"

# nearcore core/account-id: parts of lowercase alphanumerics joined by single separators (- _ .).
_ACCOUNT_ID = re.compile(r"[a-z0-9]+(?:[-_.][a-z0-9]+)*")
_IMPLICIT = re.compile(r"[0-9a-f]{64}")


def account_id_problem(account_id: object) -> str | None:
    """Why `account_id` is not a NEAR account id (nearcore's AccountId::validate), or None when it is."""
    if not isinstance(account_id, str):
        return f"is a {type(account_id).__name__}, not a string"
    if not 2 <= len(account_id) <= 64:
        return f"is {len(account_id)} characters long; NEAR account ids have 2 to 64"
    if _ACCOUNT_ID.fullmatch(account_id) is None:
        return (
            f"{account_id!r} is not lowercase a-z 0-9 parts joined by single separators (- _ .) "
            "without one at either end"
        )
    return None


def is_account_id(account_id: object) -> bool:
    return account_id_problem(account_id) is None


def is_implicit(account_id: str) -> bool:
    """A NEAR-implicit account (64 lowercase hex: an ed25519 key), which exists once it is paid."""
    return isinstance(account_id, str) and _IMPLICIT.fullmatch(account_id) is not None


def implicit_account(key: bytes) -> str:
    """The implicit account an ed25519 public key controls: its hex, which is also its deposit address."""
    return _key32(key, "public key").hex()


def _require_account_id(account_id: object, what: str) -> None:
    problem = account_id_problem(account_id)
    if problem is not None:
        raise NearCodecError(f"{what} {problem}")


def _require_uint(value: object, limit: int, what: str) -> None:
    # bool is an int in Python; True as an amount is always a mistake.
    if isinstance(value, bool) or not isinstance(value, int):
        raise NearCodecError(f"{what} must be an int, not {type(value).__name__}")
    if not 0 <= value < limit:
        raise NearCodecError(f"{what} {value} is outside 0 .. 2**{limit.bit_length() - 1} - 1")


def _key32(key: object, what: str) -> bytes:
    if not isinstance(key, bytes) or len(key) != 32:
        raise NearCodecError(f"{what} must be 32 bytes")
    return key


@dataclass(frozen=True)
class Transfer:
    """Send `deposit` yoctoNEAR to the transaction's receiver."""

    deposit: int

    def __post_init__(self) -> None:
        _require_uint(self.deposit, U128_LIMIT, "Transfer deposit")


@dataclass(frozen=True)
class DeleteAccount:
    """Delete the receiver (which must be the signer) and pay its whole balance to `beneficiary_id`."""

    beneficiary_id: str

    def __post_init__(self) -> None:
        _require_account_id(self.beneficiary_id, "DeleteAccount beneficiary_id")


Action = Transfer | DeleteAccount


@dataclass(frozen=True)
class Transaction:
    """A legacy (V0) NEAR transaction, the format every wallet and near-api-js still sends."""

    signer_id: str
    public_key: bytes
    nonce: int
    receiver_id: str
    block_hash: bytes
    actions: tuple[Action, ...]

    def __post_init__(self) -> None:
        _require_account_id(self.signer_id, "signer_id")
        _key32(self.public_key, "public_key")
        _require_uint(self.nonce, U64_LIMIT, "nonce")
        _require_account_id(self.receiver_id, "receiver_id")
        _key32(self.block_hash, "block_hash")
        if not isinstance(self.actions, tuple):
            raise NearCodecError("actions must be a tuple (the transaction is immutable)")
        if not self.actions:
            raise NearCodecError("actions is empty: a transaction that does nothing still costs gas")
        for action in self.actions:
            if not isinstance(action, Transfer | DeleteAccount):
                raise NearCodecError(f"actions holds a {type(action).__name__}, not an action Kassa builds")

    def encode(self) -> bytes:
        out = bytearray()
        _put_string(out, self.signer_id)
        out += bytes([ED25519]) + self.public_key
        out += self.nonce.to_bytes(8, "little")
        _put_string(out, self.receiver_id)
        out += self.block_hash
        out += len(self.actions).to_bytes(4, "little")
        for action in self.actions:
            out += encode_action(action)
        return bytes(out)

    @classmethod
    def decode(cls, data: bytes) -> Transaction:
        """The transaction `data` holds exactly; NearCodecError on anything else, trailing bytes included."""
        reader = _Reader(data)
        tx = _read_transaction(reader)
        reader.end("transaction")
        return tx

    def hash(self) -> bytes:
        """What the key signs, and (in base58) the hash NEAR knows the transaction by."""
        return hashlib.sha256(self.encode()).digest()

    def txid(self) -> str:
        return b58encode(self.hash())


def encode_action(action: Action) -> bytes:
    if isinstance(action, Transfer):
        return bytes([TRANSFER_TAG]) + action.deposit.to_bytes(16, "little")
    if isinstance(action, DeleteAccount):
        out = bytearray([DELETE_ACCOUNT_TAG])
        _put_string(out, action.beneficiary_id)
        return bytes(out)
    raise NearCodecError(f"action {type(action).__name__} is not one Kassa builds")


def _put_string(out: bytearray, text: str) -> None:
    raw = text.encode()
    out += len(raw).to_bytes(4, "little") + raw


def sign(tx: Transaction, private_key: bytes) -> bytes:
    """The SignedTransaction's borsh bytes (what `send_tx` takes, base64-encoded).

    `private_key` is the 32-byte ed25519 seed (the first half of NEAR's 64-byte "ed25519:..." secret key).
    A key that is not the transaction's own is refused: nearcore would reject the signature anyway, and
    only after the payout was recorded as sent.
    """
    if ed25519_public_key(private_key) != tx.public_key:
        raise NearCodecError("the private key does not belong to the transaction's public_key")
    return tx.encode() + bytes([ED25519]) + ed25519_sign(private_key, tx.hash())


def decode_signed(data: bytes) -> tuple[Transaction, bytes]:
    """(transaction, 64-byte ed25519 signature) from SignedTransaction bytes; verifies nothing."""
    reader = _Reader(data)
    tx = _read_transaction(reader)
    reader.key_type("signature")
    signature = reader.take(64, "signature")
    reader.end("signed transaction")
    return tx, signature


def verify(tx: Transaction, signature: bytes) -> bool:
    """Whether `signature` is tx.public_key's ed25519 signature of tx.hash()."""
    return ed25519_verify(tx.public_key, tx.hash(), signature)


def ed25519_public_key(private_key: bytes) -> bytes:
    """The public key of a 32-byte RFC 8032 private key (seed)."""
    key = Ed25519PrivateKey.from_private_bytes(_key32(private_key, "private key"))
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def ed25519_sign(private_key: bytes, message: bytes) -> bytes:
    """Plain RFC 8032 ed25519 of `message`; NEAR passes the transaction's sha256 as the message."""
    return Ed25519PrivateKey.from_private_bytes(_key32(private_key, "private key")).sign(message)


def ed25519_verify(public_key: bytes, message: bytes, signature: bytes) -> bool:
    if not isinstance(signature, bytes) or len(signature) != 64:
        return False
    try:
        Ed25519PublicKey.from_public_bytes(_key32(public_key, "public key")).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def b58encode(data: bytes) -> str:
    """Base58 with the bitcoin alphabet, no checksum: NEAR's keys, hashes and block hashes."""
    return Base58Encoder.Encode(data)


def b58decode(text: str) -> bytes:
    if not isinstance(text, str) or not text:
        raise NearCodecError("base58 text must be a non-empty string")
    try:
        return Base58Decoder.Decode(text)
    except ValueError:
        # Never echoed: a pasted secret key must not reach logs.
        raise NearCodecError("not base58 (bitcoin alphabet)") from None


def public_key_text(key: bytes) -> str:
    """The "ed25519:<base58>" form NEAR's RPC, wallets and near-api-js print."""
    return KEY_PREFIX + b58encode(_key32(key, "public key"))


def parse_public_key(text: str) -> bytes:
    if not isinstance(text, str) or not text.startswith(KEY_PREFIX):
        raise NearCodecError(f'a NEAR public key is "{KEY_PREFIX}" followed by base58')
    key = b58decode(text.removeprefix(KEY_PREFIX))
    if len(key) != 32:
        raise NearCodecError(f"an ed25519 public key is 32 bytes, this one {len(key)}")
    return key


class _Reader:
    """Borsh reading over one buffer; every read names the field it was for, so refusals are legible."""

    def __init__(self, data: bytes) -> None:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise NearCodecError(f"expected bytes, not {type(data).__name__}")
        self._data = bytes(data)
        self._at = 0

    def take(self, size: int, what: str) -> bytes:
        if self._at + size > len(self._data):
            raise NearCodecError(
                f"truncated at byte {self._at}: {what} needs {size} bytes, {len(self._data) - self._at} left"
            )
        chunk = self._data[self._at : self._at + size]
        self._at += size
        return chunk

    def peek(self, size: int, what: str) -> bytes:
        chunk = self.take(size, what)
        self._at -= size
        return chunk

    def uint(self, size: int, what: str) -> int:
        return int.from_bytes(self.take(size, what), "little")

    def account_id(self, what: str) -> str:
        size = self.uint(4, f"{what} length")
        raw = self.take(size, what)
        try:
            text = raw.decode("utf-8", errors="strict")
        except UnicodeDecodeError:
            raise NearCodecError(f"{what} is not valid UTF-8") from None
        _require_account_id(text, what)
        return text

    def key_type(self, what: str) -> None:
        tag = self.uint(1, f"{what} key type")
        if tag != ED25519:
            name = _KEY_TYPES.get(tag, "unknown")
            raise NearCodecError(f"{what} key type is {tag} ({name}); Kassa's keys are ed25519 (0)")

    def end(self, what: str) -> None:
        if self._at != len(self._data):
            raise NearCodecError(f"{len(self._data) - self._at} trailing bytes after the {what}")

    @property
    def remaining(self) -> int:
        return len(self._data) - self._at


def _read_transaction(reader: _Reader) -> Transaction:
    head = reader.peek(2, "signer_id length")
    # nearcore tells V1 from V0 by its first two bytes: V1 starts with 1 and then a non-empty string's
    # length, while V0's signer_id length (2..64) always leaves the second byte 0.
    if head[0] == 1 and head[1] != 0:
        raise NearCodecError(
            "this is a TransactionV1 (first byte 1, as nearcore tells them apart); Kassa builds and "
            "accepts only the V0 format"
        )
    signer_id = reader.account_id("signer_id")
    reader.key_type("public_key")
    public_key = reader.take(32, "public_key")
    nonce = reader.uint(8, "nonce")
    receiver_id = reader.account_id("receiver_id")
    block_hash = reader.take(32, "block_hash")
    count = reader.uint(4, "actions count")
    if count > reader.remaining:  # every action is at least its tag byte
        raise NearCodecError(f"truncated: {count} actions announced, {reader.remaining} bytes left")
    actions = tuple(_read_action(reader, i) for i in range(count))
    return Transaction(signer_id, public_key, nonce, receiver_id, block_hash, actions)


def _read_action(reader: _Reader, index: int) -> Action:
    tag = reader.uint(1, f"action {index} tag")
    if tag == TRANSFER_TAG:
        return Transfer(reader.uint(16, f"action {index} Transfer deposit"))
    if tag == DELETE_ACCOUNT_TAG:
        return DeleteAccount(reader.account_id(f"action {index} DeleteAccount beneficiary_id"))
    name = _ACTION_NAMES[tag] if tag < len(_ACTION_NAMES) else "unknown to nearcore's Action enum"
    raise NearCodecError(
        f"action {index} has tag {tag} ({name}); Kassa accepts only Transfer and DeleteAccount"
    )

"""The devnet's own borsh codec for NEAR's legacy (V0) SignedTransaction, independent of chains.near.

Decoded: signer_id (u32 length + utf-8), public_key (u8 key type 0 = ed25519 + 32 bytes), nonce (u64 LE),
receiver_id, block_hash (32 bytes), actions (u32 count of an enum with a u8 tag), then the signature (u8 0
+ 64 bytes). Of the actions only Transfer (3), DeleteAccount (7) and FunctionCall (2, which only the
devnet's own controls may send) are understood; any other tag is refused by name. The transaction hash is
sha256 of the Transaction's bytes (everything before the signature), written in base58 (bitcoin alphabet).
The encoder is used by the controls to sign the faucet's transactions."""

from __future__ import annotations

import base64
import hashlib
import struct
from dataclasses import dataclass
from typing import Any

from bip_utils import Base58Decoder, Base58Encoder

ACTION_TAGS = {
    0: "CreateAccount",
    1: "DeployContract",
    2: "FunctionCall",
    3: "Transfer",
    4: "Stake",
    5: "AddKey",
    6: "DeleteKey",
    7: "DeleteAccount",
    8: "Delegate",
    9: "DeployGlobalContract",
    10: "UseGlobalContract",
}
TAG_OF = {name: tag for tag, name in ACTION_TAGS.items()}


class BorshError(ValueError):
    """The bytes are not a SignedTransaction this devnet can read."""


class UnsupportedAction(BorshError):
    def __init__(self, tag: int) -> None:
        self.tag = tag
        self.action = ACTION_TAGS.get(tag, f"unknown action tag {tag}")
        super().__init__(f"{self.action} (tag {tag}) is not supported by the NEAR devnet stub")


def b58encode(data: bytes) -> str:
    return Base58Encoder.Encode(data)


def b58decode(text: str) -> bytes:
    return Base58Decoder.Decode(text)


def key_text(public_key: bytes) -> str:
    return "ed25519:" + b58encode(public_key)


@dataclass(frozen=True)
class Action:
    kind: str  # "Transfer" | "DeleteAccount" | "FunctionCall"
    deposit: int = 0
    beneficiary_id: str = ""
    method_name: str = ""
    args: bytes = b""
    gas: int = 0

    def to_json(self) -> dict[str, Any]:
        if self.kind == "Transfer":
            return {"Transfer": {"deposit": str(self.deposit)}}
        if self.kind == "DeleteAccount":
            return {"DeleteAccount": {"beneficiary_id": self.beneficiary_id}}
        return {
            "FunctionCall": {
                "method_name": self.method_name,
                "args": base64.b64encode(self.args).decode(),
                "gas": self.gas,
                "deposit": str(self.deposit),
            }
        }


@dataclass(frozen=True)
class SignedTransaction:
    signer_id: str
    public_key: bytes
    nonce: int
    receiver_id: str
    block_hash: bytes
    actions: tuple[Action, ...]
    signature: bytes
    hash: bytes  # sha256 of the Transaction's borsh bytes

    @property
    def hash_b58(self) -> str:
        return b58encode(self.hash)

    def to_json(self) -> dict[str, Any]:
        return {
            "signer_id": self.signer_id,
            "public_key": key_text(self.public_key),
            "nonce": self.nonce,
            "receiver_id": self.receiver_id,
            "actions": [action.to_json() for action in self.actions],
            "priority_fee": 0,
            "signature": "ed25519:" + b58encode(self.signature),
            "hash": self.hash_b58,
        }


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise BorshError(f"truncated: wanted {n} bytes at offset {self.pos} of {len(self.data)}")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def u8(self) -> int:
        return self.take(1)[0]

    def u32(self) -> int:
        return int(struct.unpack("<I", self.take(4))[0])

    def u64(self) -> int:
        return int(struct.unpack("<Q", self.take(8))[0])

    def u128(self) -> int:
        return int.from_bytes(self.take(16), "little")

    def string(self) -> str:
        try:
            return self.take(self.u32()).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BorshError(f"a string is not utf-8: {exc}") from exc

    def ed25519(self, what: str) -> bytes:
        key_type = self.u8()
        if key_type != 0:
            raise BorshError(f"{what}: key type {key_type} is not ed25519 (0)")
        return self.take(64 if what == "signature" else 32)


def _action(reader: _Reader) -> Action:
    tag = reader.u8()
    if tag == 3:
        return Action("Transfer", deposit=reader.u128())
    if tag == 7:
        return Action("DeleteAccount", beneficiary_id=reader.string())
    if tag == 2:
        method = reader.string()
        args = reader.take(reader.u32())
        return Action("FunctionCall", method_name=method, args=args, gas=reader.u64(), deposit=reader.u128())
    raise UnsupportedAction(tag)


def decode_signed_transaction(data: bytes) -> SignedTransaction:
    reader = _Reader(data)
    if len(data) >= 4 and struct.unpack("<I", data[:4])[0] & (1 << 30):
        raise BorshError("a V1 transaction (with priority fee): only the legacy V0 layout is read")
    signer_id = reader.string()
    public_key = reader.ed25519("public_key")
    nonce = reader.u64()
    receiver_id = reader.string()
    block_hash = reader.take(32)
    actions = tuple(_action(reader) for _ in range(reader.u32()))
    transaction_end = reader.pos
    signature = reader.ed25519("signature")
    if reader.pos != len(data):
        raise BorshError(f"{len(data) - reader.pos} bytes after the signature")
    return SignedTransaction(
        signer_id=signer_id,
        public_key=public_key,
        nonce=nonce,
        receiver_id=receiver_id,
        block_hash=block_hash,
        actions=actions,
        signature=signature,
        hash=hashlib.sha256(data[:transaction_end]).digest(),
    )


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<I", len(raw)) + raw


def _encode_action(action: Action) -> bytes:
    tag = bytes([TAG_OF[action.kind]])
    if action.kind == "Transfer":
        return tag + action.deposit.to_bytes(16, "little")
    if action.kind == "DeleteAccount":
        return tag + _string(action.beneficiary_id)
    return (
        tag
        + _string(action.method_name)
        + struct.pack("<I", len(action.args))
        + action.args
        + struct.pack("<Q", action.gas)
        + action.deposit.to_bytes(16, "little")
    )


def encode_transaction(
    signer_id: str,
    public_key: bytes,
    nonce: int,
    receiver_id: str,
    block_hash: bytes,
    actions: tuple[Action, ...] | list[Action],
) -> bytes:
    return (
        _string(signer_id)
        + b"\x00"
        + public_key
        + struct.pack("<Q", nonce)
        + _string(receiver_id)
        + block_hash
        + struct.pack("<I", len(actions))
        + b"".join(_encode_action(action) for action in actions)
    )


def encode_signed(transaction: bytes, signature: bytes) -> bytes:
    return transaction + b"\x00" + signature

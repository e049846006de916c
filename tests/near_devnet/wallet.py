"""The tests' own signer: a tiny borsh ENCODER of a legacy SignedTransaction, written apart from the stub's
borsh.py (and from chains.near) so the stub's decoder is checked against an independent encoding."""

from __future__ import annotations

import base64
import hashlib
import struct

from bip_utils import Base58Decoder, Base58Encoder
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat


def keypair(seed: str) -> tuple[Ed25519PrivateKey, bytes]:
    private = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(seed.encode()).digest())
    return private, private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def implicit_id(public_key: bytes) -> str:
    return public_key.hex()


def key_text(public_key: bytes) -> str:
    return "ed25519:" + Base58Encoder.Encode(public_key)


def transfer(amount: int) -> bytes:
    return bytes([3]) + amount.to_bytes(16, "little")


def delete_account(beneficiary_id: str) -> bytes:
    return bytes([7]) + _string(beneficiary_id)


def add_key_action(public_key: bytes) -> bytes:  # an action the stub refuses (AddKey, full access)
    return bytes([5, 0]) + public_key + struct.pack("<Q", 0) + bytes([1])


def _string(text: str) -> bytes:
    return struct.pack("<I", len(text.encode())) + text.encode()


def sign(
    private: Ed25519PrivateKey,
    signer_id: str,
    nonce: int,
    receiver_id: str,
    block_hash: str,
    actions: list[bytes],
    *,
    corrupt: bool = False,
) -> tuple[str, str]:
    """(signed_tx_base64, tx hash in base58)."""
    public = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    body = (
        _string(signer_id)
        + b"\x00"
        + public
        + struct.pack("<Q", nonce)
        + _string(receiver_id)
        + Base58Decoder.Decode(block_hash)
        + struct.pack("<I", len(actions))
        + b"".join(actions)
    )
    digest = hashlib.sha256(body).digest()
    signature = private.sign(digest)
    if corrupt:
        signature = bytes([signature[0] ^ 1]) + signature[1:]
    return base64.b64encode(body + b"\x00" + signature).decode(), Base58Encoder.Encode(digest)

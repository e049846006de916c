"""secp256k1 keys as TRON uses them: the address is 0x41 + the last 20 bytes of keccak(public key), and a
signature is 65 bytes (r, s, recovery id) over the txid (sha256 of raw_data). The devnet checks with
`recover`; tests sign with `Key.sign` (the devnet's own helper, not Kassa's client)."""

from __future__ import annotations

import hashlib
from typing import Any

import coincurve
from eth_utils import keccak

from tests.tron_devnet.encoding import PREFIX, address_bytes, b58check_encode


def address_of(public_key: coincurve.PublicKey) -> bytes:
    return bytes([PREFIX]) + keccak(public_key.format(compressed=False)[1:])[-20:]


def recover(txid: bytes, signature: bytes) -> bytes | None:
    """The address that made `signature` over `txid`, or None when it is not a valid signature."""
    if len(signature) != 65:
        return None
    recovery = signature[64] - 27 if signature[64] >= 27 else signature[64]
    if recovery not in (0, 1):
        return None
    try:
        public = coincurve.PublicKey.from_signature_and_message(
            signature[:64] + bytes([recovery]), txid, hasher=None
        )
    except ValueError:
        return None
    return address_of(public)


class Key:
    def __init__(self, secret: bytes) -> None:
        self.secret = secret
        self._key = coincurve.PrivateKey(secret)
        self.raw_address = address_of(self._key.public_key)
        self.address = b58check_encode(self.raw_address)
        self.hex_address = self.raw_address.hex()

    @classmethod
    def from_seed(cls, seed: str) -> Key:
        """A deterministic key for a named devnet account (never for real money)."""
        return cls(hashlib.sha256(f"kassa tron devnet: {seed}".encode()).digest())

    @staticmethod
    def abi_address(address: str) -> str:
        """An address as one ABI word in hex (the 20 bytes after 0x41), for `parameter` of a contract call."""
        return address_bytes(address)[1:].rjust(32, b"\0").hex()

    def sign_txid(self, txid: bytes) -> bytes:
        return self._key.sign_recoverable(txid, hasher=None)

    def sign(self, transaction: dict[str, Any]) -> dict[str, Any]:
        """The transaction (java-tron JSON) with this key's signature appended, as TronWeb's trx.sign does:
        the txid is recomputed from raw_data_hex, never taken from the JSON."""
        txid = hashlib.sha256(bytes.fromhex(transaction["raw_data_hex"])).digest()
        signed = dict(transaction)
        signed["signature"] = [*transaction.get("signature", []), self.sign_txid(txid).hex()]
        return signed

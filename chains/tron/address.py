"""TRON addresses: 0x41 and the 20 bytes an EVM address has, written three ways.

- base58check, the `T...` form users see and Kassa stores (34 characters);
- hex, `41` + 40 hex digits: what java-tron's HTTP API speaks with `"visible": false`, and what a
  transaction's protobuf holds (as the 21 bytes);
- the EVM form, `0x` + 40 hex digits: what the TVM sees (ABI words, event topics, log addresses).

An address is the last 20 bytes of keccak-256 of the uncompressed secp256k1 public key (without its 0x04
byte), as on Ethereum, behind the 0x41 prefix. Base58check and keccak come from bip-utils, which derives
the deposit addresses (chains.derivation) and validates withdrawal addresses (chains.addresses) through
this module, so there is one rule for what a TRON address is.
"""

from __future__ import annotations

import re

from bip_utils import Base58Decoder, Base58Encoder, Secp256k1PublicKey, TrxAddrEncoder
from bip_utils.base58 import Base58ChecksumError

PREFIX = b"\x41"
SIZE = 21  # the prefix and the 20-byte account id

_BASE58 = re.compile(r"T[1-9A-HJ-NP-Za-km-z]{33}")
_HEX = re.compile(r"41[0-9a-fA-F]{40}")
_EVM = re.compile(r"(0x)?[0-9a-fA-F]{40}")


class InvalidTronAddress(ValueError):
    """Not a TRON address; the message says what is wrong with it (never a guess at what was meant)."""


def to_bytes(address: str | bytes) -> bytes:
    """The 21 bytes of a TRON address given as `T...`, as `41...` hex, or as its 21 bytes."""
    if isinstance(address, bytes | bytearray):
        raw = bytes(address)
        if len(raw) != SIZE or raw[:1] != PREFIX:
            raise InvalidTronAddress(f"a TRON address is 0x41 and 20 bytes, not {raw.hex() or 'nothing'}")
        return raw
    if not isinstance(address, str):
        raise InvalidTronAddress(f"a TRON address is text, not {type(address).__name__}")
    text = address.strip()
    if _HEX.fullmatch(text):
        return bytes.fromhex(text)
    if len(text) != 34 or not text.startswith("T"):
        raise InvalidTronAddress(f"{_shown(text)} is not a TRON address (T and 33 base58 characters)")
    if not _BASE58.fullmatch(text):
        raise InvalidTronAddress(f"{_shown(text)} has characters base58 does not use (0, O, I or l)")
    try:
        raw = Base58Decoder.CheckDecode(text)
    except Base58ChecksumError:
        raise InvalidTronAddress(f"{_shown(text)} has a bad checksum (a typo?)") from None
    if len(raw) != SIZE or raw[:1] != PREFIX:
        raise InvalidTronAddress(f"{_shown(text)} does not hold 0x41 and 20 bytes")
    return raw


def validate(address: str) -> str:
    """`address` if it is a valid base58check `T...` address (the form Kassa stores); else
    InvalidTronAddress. The hex form is refused here: users never see it."""
    if not isinstance(address, str):
        raise InvalidTronAddress(f"a TRON address is text, not {type(address).__name__}")
    text = address.strip()
    if _HEX.fullmatch(text):
        raise InvalidTronAddress("a TRON address is written T..., not in its 41... hex form")
    to_bytes(text)
    return text


def is_valid(address: str) -> bool:
    try:
        validate(address)
    except InvalidTronAddress:
        return False
    return True


def to_base58(address: str | bytes) -> str:
    """The `T...` form of an address given in any TRON form (T..., 41... hex, 21 bytes)."""
    return Base58Encoder.CheckEncode(to_bytes(address))


def to_hex(address: str | bytes) -> str:
    """The `41...` hex form (lowercase) java-tron speaks with `"visible": false`."""
    return to_bytes(address).hex()


def from_evm(address: str | bytes) -> str:
    """The `T...` address of a 20-byte EVM address (`0x...` or bare hex, any case, or the 20 bytes)."""
    if isinstance(address, bytes | bytearray):
        if len(address) != SIZE - 1:
            raise InvalidTronAddress(f"an EVM address is 20 bytes, not {len(address)}")
        return to_base58(PREFIX + bytes(address))
    if not isinstance(address, str) or not _EVM.fullmatch(address):
        raise InvalidTronAddress(f"{_shown(str(address))} is not a 20-byte EVM address (0x and 40 hex)")
    return to_base58(PREFIX + bytes.fromhex(address.removeprefix("0x")))


def to_evm(address: str | bytes) -> str:
    """The EVM form of a TRON address: `0x` + 40 lowercase hex digits."""
    return "0x" + to_bytes(address)[1:].hex()


def from_public_key(key: bytes) -> str:
    """The `T...` address of a secp256k1 public key, compressed (33 bytes) or not (65 or 64 bytes)."""
    if len(key) == 64:
        key = b"\x04" + key
    if not Secp256k1PublicKey.IsValidBytes(key):
        raise InvalidTronAddress("not a secp256k1 public key")
    return str(TrxAddrEncoder.EncodeKey(key))


def _shown(text: str) -> str:
    """`text` for an error message: short, and only what a user typed (an address is public)."""
    return repr(text if len(text) <= 48 else text[:45] + "...")

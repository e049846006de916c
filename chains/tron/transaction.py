"""TRON transactions: the txid, secp256k1 signatures, the JSON java-tron speaks, and TRC-20 calls and events.

- txid = sha256 of the protobuf `raw_data` bytes (chains.tron.proto); the signature is over the txid's 32
  bytes, without any prefix: r || s || v, 65 bytes. `sign` writes v as the recovery id (0 or 1), as
  java-tron itself signs; TronWeb writes 27 or 28. java-tron adds 27 to a v under 27 before it recovers,
  so it takes both, and so does `recover_signer`.
- `sign` takes the raw bytes, never a hash: it reads them first (a transaction it cannot read fully is
  refused) and computes the txid itself.
- The JSON form of `wallet/broadcasttransaction` has the transaction twice: `raw_data` (what java-tron
  rebuilds the protobuf from) and `raw_data_hex`. `Transaction.from_json` reads the node's JSON back from
  `raw_data_hex` and refuses it unless its `txID` and `raw_data` say the same as those bytes.
- TRC-20 is ERC-20 on the TVM: `transfer(address,uint256)` calldata holds the 20-byte address (no 0x41),
  and a `Transfer` log names the token's contract and both addresses in the 20-byte form too.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from coincurve import PrivateKey, PublicKey

from chains.tron import address, proto
from chains.tron.proto import Contract, ContractMessage, ProtoError, RawData

TRANSFER_SELECTOR = bytes.fromhex("a9059cbb")  # keccak("transfer(address,uint256)")[:4]
# keccak("Transfer(address,address,uint256)"), as java-tron writes topics: hex without 0x.
TRANSFER_TOPIC = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
_UINT256_MAX = 2**256 - 1
_HEX = re.compile(r"(?:[0-9a-fA-F]{2})*")


class TransactionMismatch(ValueError):
    """A node's JSON of a transaction that does not say what its own bytes say."""


def txid(raw_bytes: bytes) -> str:
    """The transaction id of `raw_bytes` (a `Transaction.raw`): sha256, as 64 lowercase hex digits."""
    return hashlib.sha256(raw_bytes).hexdigest()


def sign(raw_bytes: bytes, private_key: bytes) -> bytes:
    """The 65-byte signature r || s || v (v = recovery id 0 or 1) of the transaction `raw_bytes` by
    `private_key` (32 bytes). Raises ProtoError, and signs nothing, if the bytes cannot be read fully."""
    proto.decode_raw(raw_bytes)
    digest = hashlib.sha256(raw_bytes).digest()
    # RFC 6979 nonces and low s: the same key and transaction always give the same signature.
    return PrivateKey(private_key).sign_recoverable(digest, hasher=None)


def recover_signer(transaction_id: str | bytes, signature: bytes) -> str:
    """The `T...` address whose key made `signature` over the txid; ValueError if it recovers none."""
    digest = bytes.fromhex(transaction_id) if isinstance(transaction_id, str) else bytes(transaction_id)
    if len(digest) != 32:
        raise ValueError("a txid is 32 bytes")
    if len(signature) != 65:
        raise ValueError(f"a TRON signature is 65 bytes (r, s, v), not {len(signature)}")
    v = signature[64] - 27 if signature[64] >= 27 else signature[64]
    if v not in (0, 1):
        raise ValueError(f"a signature's v is 0, 1, 27 or 28, not {signature[64]}")
    try:
        key = PublicKey.from_signature_and_message(signature[:64] + bytes([v]), digest, hasher=None)
    except Exception as exc:  # coincurve raises plain Exception for a signature that recovers no key
        raise ValueError("the signature recovers no public key") from exc
    return address.from_public_key(key.format(compressed=False))


def private_key_address(private_key: bytes) -> str:
    """The `T...` address of a 32-byte secp256k1 private key."""
    return address.from_public_key(PrivateKey(private_key).public_key.format(compressed=False))


# --- the JSON form ------------------------------------------------------------------------------------


def raw_data_json(raw: RawData) -> dict[str, Any]:
    """`raw` as java-tron writes `raw_data` with `"visible": false`: addresses and bytes in hex, enums by
    name, fields at their default value left out."""
    contracts = []
    for contract in raw.contracts:
        parameter = contract.parameter
        entry: dict[str, Any] = {
            "parameter": {
                "value": _message_json(parameter),
                "type_url": proto.TYPE_URL_PREFIX + parameter.name(),
            },
            "type": parameter.name(),
        }
        if contract.permission_id:
            entry["Permission_id"] = contract.permission_id
        contracts.append(entry)
    out: dict[str, Any] = {"contract": contracts}
    if raw.ref_block_bytes:
        out["ref_block_bytes"] = raw.ref_block_bytes.hex()
    if raw.ref_block_num:
        out["ref_block_num"] = raw.ref_block_num
    if raw.ref_block_hash:
        out["ref_block_hash"] = raw.ref_block_hash.hex()
    if raw.expiration:
        out["expiration"] = raw.expiration
    if raw.data:
        out["data"] = raw.data.hex()
    if raw.timestamp:
        out["timestamp"] = raw.timestamp
    if raw.fee_limit:
        out["fee_limit"] = raw.fee_limit
    return out


def _message_json(message: ContractMessage) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in message.FIELDS:
        value = getattr(message, field.name)
        if field.kind == "address":
            out[field.name] = address.to_hex(value)
        elif field.kind == "bytes":
            if value:
                out[field.name] = value.hex()
        elif field.kind == "enum":
            if value:
                out[field.name] = value.name
        elif value:  # int64, and bool true
            out[field.name] = value
    return out


def _comparable(value: Any, key: str = "") -> Any:
    """A node's JSON value in the form `raw_data_json` writes: defaults dropped, hex lowercase, addresses
    in hex (a `"visible": true` answer has them as T...)."""
    if isinstance(value, dict):
        kept = {k: _comparable(v, k) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, 0, False, "", [], {}, "BANDWIDTH", "Normal")}
    if isinstance(value, list):
        return [_comparable(item) for item in value]
    if isinstance(value, str) and key.endswith("address") and value.startswith("T"):
        try:
            return address.to_hex(value)
        except address.InvalidTronAddress:
            return value
    if isinstance(value, str) and key != "type_url" and _HEX.fullmatch(value):
        return value.lower()
    return value


@dataclass(frozen=True)
class Transaction:
    """A transaction: its `raw_data` as read, its bytes, and its signatures (none while unsigned)."""

    raw: RawData
    raw_bytes: bytes
    signatures: tuple[bytes, ...] = ()

    @classmethod
    def build(cls, raw: RawData) -> Transaction:
        return cls(raw, proto.encode_raw(raw))

    @property
    def txid(self) -> str:
        return txid(self.raw_bytes)

    @property
    def contract(self) -> ContractMessage:
        """The parameter of its one contract (java-tron accepts only transactions with exactly one)."""
        if len(self.raw.contracts) != 1:
            raise ProtoError(f"a transaction with {len(self.raw.contracts)} contracts")
        return self.raw.contracts[0].parameter

    def signed(self, private_key: bytes) -> Transaction:
        return Transaction(self.raw, self.raw_bytes, (*self.signatures, sign(self.raw_bytes, private_key)))

    def signers(self) -> list[str]:
        return [recover_signer(self.txid, signature) for signature in self.signatures]

    def to_json(self) -> dict[str, Any]:
        """The body of `wallet/broadcasttransaction`."""
        return {
            "txID": self.txid,
            "raw_data": raw_data_json(self.raw),
            "raw_data_hex": self.raw_bytes.hex(),
            "signature": [signature.hex() for signature in self.signatures],
            "visible": False,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Transaction:
        """A transaction as a node wrote it (built by the node, or read back by id), read from its
        `raw_data_hex`; TransactionMismatch if its `txID` or `raw_data` say otherwise, ProtoError if the
        bytes hold what Kassa cannot read."""
        raw_hex = body.get("raw_data_hex")
        if not isinstance(raw_hex, str) or not raw_hex or not _HEX.fullmatch(raw_hex):
            raise TransactionMismatch("the transaction has no raw_data_hex")
        raw_bytes = bytes.fromhex(raw_hex)
        raw = proto.decode_raw(raw_bytes)
        if str(body.get("txID", "")).lower() != txid(raw_bytes):
            raise TransactionMismatch(f"txID {body.get('txID')!r} is not the sha256 of raw_data_hex")
        if "raw_data" in body and _comparable(body["raw_data"]) != _comparable(raw_data_json(raw)):
            raise TransactionMismatch(f"{txid(raw_bytes)}: raw_data does not say what raw_data_hex says")
        listed = body.get("signature") or []
        if not isinstance(listed, list):
            raise TransactionMismatch(f"{txid(raw_bytes)}: signature is a list")
        signatures = []
        for text in listed:
            if not isinstance(text, str) or not re.fullmatch(r"(0x)?[0-9a-fA-F]{130}", text):
                raise TransactionMismatch(f"{txid(raw_bytes)}: a signature is 65 bytes of hex")
            signatures.append(bytes.fromhex(text.removeprefix("0x")))
        return cls(raw, raw_bytes, tuple(signatures))


def single(
    parameter: ContractMessage, *, ref_block: tuple[bytes, bytes], expiration: int, **raw: Any
) -> RawData:
    """The `raw_data` of one contract: `ref_block` is (ref_block_bytes, ref_block_hash), see `tapos`."""
    return RawData(
        ref_block_bytes=ref_block[0],
        ref_block_hash=ref_block[1],
        expiration=expiration,
        contracts=(Contract(parameter),),
        **raw,
    )


def tapos(height: int, block_id: str) -> tuple[bytes, bytes]:
    """(ref_block_bytes, ref_block_hash) naming block `height` with id `block_id`: bytes 6..8 of its
    height and bytes 8..16 of its id, as java-tron checks them."""
    return height.to_bytes(8, "big")[6:8], bytes.fromhex(block_id)[8:16]


# --- TRC-20 -------------------------------------------------------------------------------------------


def trc20_transfer_data(to: str, amount: int) -> bytes:
    """The calldata of `transfer(to, amount)`; `amount` in the token's smallest unit."""
    if isinstance(amount, bool) or not isinstance(amount, int) or not 0 <= amount <= _UINT256_MAX:
        raise ValueError(f"a TRC-20 amount is a whole number from 0 to 2**256 - 1, not {amount!r}")
    return TRANSFER_SELECTOR + bytes(12) + address.to_bytes(to)[1:] + amount.to_bytes(32, "big")


def decode_trc20_transfer(data: bytes) -> tuple[str, int]:
    """(to as T..., amount) of `transfer(address,uint256)` calldata; ValueError for anything else (another
    function, extra or missing bytes, an address word with bits above its 20 bytes)."""
    if len(data) != 68 or data[:4] != TRANSFER_SELECTOR:
        raise ValueError("not the calldata of transfer(address,uint256)")
    if any(data[4:16]):
        raise ValueError("the address word of transfer(address,uint256) has bits above its 20 bytes")
    return address.from_evm(data[16:36]), int.from_bytes(data[36:68], "big")


@dataclass(frozen=True)
class Trc20Transfer:
    contract: str  # T... of the token
    from_address: str
    to_address: str
    amount: int  # in the token's smallest unit


def parse_transfer_log(log: Mapping[str, Any]) -> Trc20Transfer | None:
    """The TRC-20 transfer a log of `gettransactioninfoby*` records (`address` and `topics` in hex without
    0x, the address 20 bytes without 41), or None for any other log: another event, a TRC-721 Transfer
    (the id indexed: four topics), or words that cannot be addresses and an amount."""
    topics = log.get("topics")
    if not isinstance(topics, list) or len(topics) != 3:
        return None
    words = [_word(topic) for topic in topics]
    data = _word(log.get("data"))
    contract = log.get("address")
    if (
        data is None
        or not isinstance(contract, str)
        or not re.fullmatch(r"(41|0x)?[0-9a-fA-F]{40}", contract)
    ):
        return None
    topic, sender, receiver = words
    if topic != bytes.fromhex(TRANSFER_TOPIC) or sender is None or receiver is None:
        return None
    if any(sender[:12]) or any(receiver[:12]):
        return None
    return Trc20Transfer(
        contract=address.from_evm(contract[-40:]),
        from_address=address.from_evm(sender[12:]),
        to_address=address.from_evm(receiver[12:]),
        amount=int.from_bytes(data, "big"),
    )


def _word(text: Any) -> bytes | None:
    if not isinstance(text, str) or not re.fullmatch(r"(0x)?[0-9a-fA-F]{64}", text):
        return None
    return bytes.fromhex(text.removeprefix("0x"))

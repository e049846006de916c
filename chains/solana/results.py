"""What a Solana node answers, read into data classes (chains.solana.node asks). Amounts in lamports as int.

Shapes as Agave writes them (rpc-client-api's Rpc* and transaction-status's Ui* types, serde's camelCase):
addresses, signatures and blockhashes in base58 of 32, 64 and 32 bytes; slots, heights, balances and fees
as JSON integers (u64); `err` a TransactionError in serde's JSON (null when the transaction succeeded).
Each parser checks the whole answer it reads: anything else is `NodeAnswerError`, never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bip_utils import Base58Decoder

from chains.solana.errors import NodeAnswerError

MAX_U64 = 2**64 - 1
COMMITMENTS = ("processed", "confirmed", "finalized")
_BASE58 = frozenset("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz")


# --- the pieces -------------------------------------------------------------------------------------------


def u64(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_U64:
        raise NodeAnswerError(f"{where} is not a u64 integer: {value!r}")
    return value


def optional_u64(value: Any, where: str) -> int | None:
    return None if value is None else u64(value, where)


def i64(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**63) <= value < 2**63:
        raise NodeAnswerError(f"{where} is not an i64 integer: {value!r}")
    return value


def obj(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise NodeAnswerError(f"{where} is not a JSON object")
    return value


def array(value: Any, where: str) -> Sequence[Any]:
    if not isinstance(value, list):
        raise NodeAnswerError(f"{where} is not a JSON array")
    return value


def text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise NodeAnswerError(f"{where} is not a string")
    return value


def base58(value: Any, where: str, size: int | None = None) -> bytes:
    """The bytes of a base58 string (of `size` bytes when given)."""
    string = text(value, where)
    if not set(string) <= _BASE58:
        raise NodeAnswerError(f"{where} is not base58")
    data = Base58Decoder.Decode(string) if string else b""
    if size is not None and len(data) != size:
        raise NodeAnswerError(f"{where} is not {size} bytes of base58")
    return data


def address(value: Any, where: str) -> str:
    base58(value, where, 32)
    return str(value)


def signature(value: Any, where: str) -> str:
    base58(value, where, 64)
    return str(value)


def commitment(value: Any, where: str) -> str | None:
    if value is not None and value not in COMMITMENTS:
        raise NodeAnswerError(f"{where} is not a commitment: {value!r}")
    return value


def transaction_error(value: Any, where: str) -> Any:
    """A TransactionError as serde writes it: "Name", or {"Name": value} (null: no error)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Mapping) and len(value) == 1 and isinstance(next(iter(value)), str):
        return value
    raise NodeAnswerError(f"{where} is not a TransactionError: {value!r}")


def context_slot(answer: Any, method: str) -> tuple[int, Any]:
    """An RpcResponse's context slot and its value."""
    response = obj(answer, method)
    context = obj(response.get("context"), f"{method}.context")
    if "value" not in response:
        raise NodeAnswerError(f"{method}: no value")
    return u64(context.get("slot"), f"{method}.context.slot"), response["value"]


# --- answers ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Blockhash:
    """getLatestBlockhash: a transaction of `blockhash` may land until the block height passes
    `last_valid_block_height` (a height, not a slot)."""

    blockhash: str
    last_valid_block_height: int
    context_slot: int

    @classmethod
    def parse(cls, answer: Any) -> Blockhash:
        slot, value = context_slot(answer, "getLatestBlockhash")
        value = obj(value, "getLatestBlockhash.value")
        return cls(
            _blockhash(value.get("blockhash"), "getLatestBlockhash.value.blockhash"),
            u64(value.get("lastValidBlockHeight"), "getLatestBlockhash.value.lastValidBlockHeight"),
            slot,
        )


@dataclass(frozen=True)
class SignatureInfo:
    """One entry of getSignaturesForAddress. `memo` is Agave's: each memo instruction as "[len] text",
    joined by "; " (chains.solana.transfers.memo_texts reads it back)."""

    signature: str
    slot: int
    err: Any
    memo: str | None
    block_time: int | None
    confirmation_status: str | None

    @classmethod
    def parse(cls, item: Any, where: str) -> SignatureInfo:
        item = obj(item, where)
        memo = item.get("memo")
        block_time = item.get("blockTime")
        return cls(
            signature=signature(item.get("signature"), f"{where}.signature"),
            slot=u64(item.get("slot"), f"{where}.slot"),
            err=transaction_error(item.get("err"), f"{where}.err"),
            memo=None if memo is None else text(memo, f"{where}.memo"),
            block_time=None if block_time is None else i64(block_time, f"{where}.blockTime"),
            confirmation_status=commitment(item.get("confirmationStatus"), f"{where}.confirmationStatus"),
        )


@dataclass(frozen=True)
class SignatureStatus:
    """One entry of getSignatureStatuses. `confirmations` is None once the slot is rooted (finalized)."""

    slot: int
    confirmations: int | None
    err: Any
    confirmation_status: str | None

    @property
    def finalized(self) -> bool:
        if self.confirmation_status is not None:
            return self.confirmation_status == "finalized"
        return self.confirmations is None

    @classmethod
    def parse(cls, item: Any, where: str) -> SignatureStatus:
        item = obj(item, where)
        return cls(
            slot=u64(item.get("slot"), f"{where}.slot"),
            confirmations=optional_u64(item.get("confirmations"), f"{where}.confirmations"),
            err=transaction_error(item.get("err"), f"{where}.err"),
            confirmation_status=commitment(item.get("confirmationStatus"), f"{where}.confirmationStatus"),
        )


@dataclass(frozen=True)
class PrioritizationFee:
    """getRecentPrioritizationFees: the least compute-unit price (micro-lamports) landed in `slot`."""

    slot: int
    fee: int


@dataclass(frozen=True)
class Instruction:
    """A compiled instruction: indexes into the transaction's account keys, and its data's bytes."""

    program_id_index: int
    accounts: tuple[int, ...]
    data: bytes


@dataclass(frozen=True)
class TransactionMeta:
    err: Any
    fee: int
    pre_balances: tuple[int, ...]
    post_balances: tuple[int, ...]
    log_messages: tuple[str, ...] | None


@dataclass(frozen=True)
class ConfirmedTransaction:
    """getTransaction (json encoding). `account_keys` is every key the transaction loads, in the order
    Agave indexes them: the message's static keys, then the lookup tables' writable ones, then their
    read-only ones; the balances and the instructions' indexes refer to it."""

    slot: int
    block_time: int | None
    version: str | int  # "legacy" or 0
    signatures: tuple[str, ...]
    num_required_signatures: int
    num_readonly_signed: int
    num_readonly_unsigned: int
    static_keys: tuple[str, ...]
    loaded_writable: tuple[str, ...]
    loaded_readonly: tuple[str, ...]
    recent_blockhash: str
    instructions: tuple[Instruction, ...]
    meta: TransactionMeta | None

    @property
    def signature(self) -> str:
        return self.signatures[0]

    @property
    def account_keys(self) -> tuple[str, ...]:
        return self.static_keys + self.loaded_writable + self.loaded_readonly

    def is_signer(self, index: int) -> bool:
        return index < self.num_required_signatures

    def is_writable(self, index: int) -> bool:
        """As the message asks (a program id or a reserved account may still be demoted by the runtime)."""
        static = len(self.static_keys)
        if index >= static:
            return index < static + len(self.loaded_writable)
        if index < self.num_required_signatures:
            return index < self.num_required_signatures - self.num_readonly_signed
        return index < static - self.num_readonly_unsigned

    @classmethod
    def parse(cls, answer: Any) -> ConfirmedTransaction:
        where = "getTransaction"
        answer = obj(answer, where)
        version = answer.get("version", "legacy")
        if version not in ("legacy", 0) or isinstance(version, bool):
            raise NodeAnswerError(f"{where}.version is not legacy or 0: {version!r}")
        transaction = obj(answer.get("transaction"), f"{where}.transaction")
        signatures = tuple(
            signature(s, f"{where}.transaction.signatures")
            for s in array(transaction.get("signatures"), f"{where}.transaction.signatures")
        )
        message = obj(transaction.get("message"), f"{where}.transaction.message")
        header = obj(message.get("header"), f"{where}.message.header")
        required = u64(header.get("numRequiredSignatures"), f"{where}.header.numRequiredSignatures")
        readonly_signed = u64(header.get("numReadonlySignedAccounts"), f"{where}.header.numReadonlySigned")
        readonly_unsigned = u64(
            header.get("numReadonlyUnsignedAccounts"), f"{where}.header.numReadonlyUnsigned"
        )
        static_keys = tuple(
            address(key, f"{where}.message.accountKeys")
            for key in array(message.get("accountKeys"), f"{where}.message.accountKeys")
        )
        if not signatures or len(signatures) != required:
            raise NodeAnswerError(f"{where}: {len(signatures)} signatures for {required} signers")
        if readonly_signed >= required or required + readonly_unsigned > len(static_keys):
            raise NodeAnswerError(f"{where}: the header does not fit the {len(static_keys)} account keys")
        meta_json = answer.get("meta")
        loaded_writable: tuple[str, ...] = ()
        loaded_readonly: tuple[str, ...] = ()
        if meta_json is not None and obj(meta_json, f"{where}.meta").get("loadedAddresses") is not None:
            loaded = obj(meta_json["loadedAddresses"], f"{where}.meta.loadedAddresses")
            loaded_writable = tuple(
                address(k, f"{where}.meta.loadedAddresses.writable")
                for k in array(loaded.get("writable"), f"{where}.meta.loadedAddresses.writable")
            )
            loaded_readonly = tuple(
                address(k, f"{where}.meta.loadedAddresses.readonly")
                for k in array(loaded.get("readonly"), f"{where}.meta.loadedAddresses.readonly")
            )
        keys = static_keys + loaded_writable + loaded_readonly
        if len(set(keys)) != len(keys):
            raise NodeAnswerError(f"{where}: an account key appears twice")
        instructions = tuple(
            _instruction(item, len(keys), f"{where}.message.instructions[{i}]")
            for i, item in enumerate(array(message.get("instructions"), f"{where}.message.instructions"))
        )
        block_time = answer.get("blockTime")
        meta = None if meta_json is None else _meta(meta_json, len(keys), where)
        return cls(
            slot=u64(answer.get("slot"), f"{where}.slot"),
            block_time=None if block_time is None else i64(block_time, f"{where}.blockTime"),
            version=version,
            signatures=signatures,
            num_required_signatures=required,
            num_readonly_signed=readonly_signed,
            num_readonly_unsigned=readonly_unsigned,
            static_keys=static_keys,
            loaded_writable=loaded_writable,
            loaded_readonly=loaded_readonly,
            recent_blockhash=_blockhash(message.get("recentBlockhash"), f"{where}.message.recentBlockhash"),
            instructions=instructions,
            meta=meta,
        )


def _blockhash(value: Any, where: str) -> str:
    base58(value, where, 32)
    return str(value)


def _instruction(item: Any, keys: int, where: str) -> Instruction:
    item = obj(item, where)
    program = u64(item.get("programIdIndex"), f"{where}.programIdIndex")
    accounts = tuple(u64(i, f"{where}.accounts") for i in array(item.get("accounts"), f"{where}.accounts"))
    if program >= keys or any(i >= keys for i in accounts):
        raise NodeAnswerError(f"{where}: an account index past the {keys} account keys")
    return Instruction(program, accounts, base58(item.get("data"), f"{where}.data"))


def _meta(value: Any, keys: int, where: str) -> TransactionMeta:
    meta = obj(value, f"{where}.meta")
    pre = tuple(
        u64(n, f"{where}.meta.preBalances")
        for n in array(meta.get("preBalances"), f"{where}.meta.preBalances")
    )
    post = tuple(
        u64(n, f"{where}.meta.postBalances")
        for n in array(meta.get("postBalances"), f"{where}.meta.postBalances")
    )
    if len(pre) != keys or len(post) != keys:
        raise NodeAnswerError(f"{where}.meta: {len(pre)}/{len(post)} balances for {keys} account keys")
    err = transaction_error(meta.get("err"), f"{where}.meta.err")
    status = meta.get("status")
    if status is not None and status != ({"Ok": None} if err is None else {"Err": err}):
        raise NodeAnswerError(f"{where}.meta: its status and its err disagree")
    logs = meta.get("logMessages")
    return TransactionMeta(
        err=err,
        fee=u64(meta.get("fee"), f"{where}.meta.fee"),
        pre_balances=pre,
        post_balances=post,
        log_messages=None
        if logs is None
        else tuple(
            text(line, f"{where}.meta.logMessages") for line in array(logs, f"{where}.meta.logMessages")
        ),
    )

"""A client of a Solana node's JSON-RPC (Agave's, or a provider's in front of it): only the methods Kassa
uses, every answer checked for Agave's shape (chains.solana.results), every error a typed exception
(chains.solana.errors). Commitment is always sent, never left to a node's or provider's default.

Transport: chains.jsonrpc (one POST per call, answers read with limits, numbers exact; a fraction where an
integer belongs is refused here). Only an HTTP 200 is read as Agave's answer. The optional API key goes in
the `x-api-key` header; a provider that wants its key in the URL gets it there, with `url`.
"""

from __future__ import annotations

import base64
import itertools
from collections.abc import Sequence
from typing import Any

import requests
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.transaction import VersionedTransaction

from chains.jsonrpc import READ_TIMEOUT_SECONDS, JsonRpcClient
from chains.solana.errors import NodeAnswerError, SolanaNodeUnavailable, rpc_error
from chains.solana.results import (
    COMMITMENTS,
    Blockhash,
    ConfirmedTransaction,
    PrioritizationFee,
    SignatureInfo,
    SignatureStatus,
    array,
    context_slot,
    obj,
    optional_u64,
    signature,
    u64,
)

API_KEY_HEADER = "x-api-key"
MAX_SIGNATURES_FOR_ADDRESS = 1_000
MAX_SIGNATURE_STATUSES = 256
MAX_PRIORITIZATION_ADDRESSES = 128
PACKET_DATA_SIZE = 1_232
AGAVE_ANSWER_STATUSES = frozenset({200})  # Agave answers even its errors with 200: any other is not the node


class SolanaNode:
    """One Solana JSON-RPC endpoint. `api_key`: sent as `x-api-key` when given."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        timeout: float = READ_TIMEOUT_SECONDS,
        session: requests.Session | None = None,
    ) -> None:
        self.rpc = JsonRpcClient(
            url,
            unavailable=SolanaNodeUnavailable,
            malformed=NodeAnswerError,
            error=self._error,
            answer_statuses=AGAVE_ANSWER_STATUSES,
            headers={API_KEY_HEADER: api_key} if api_key else None,
            timeout=timeout,
            session=session,
        )
        self.url = url

    # --- transport -----------------------------------------------------------------------------------

    def call(self, method: str, params: Sequence[Any] = ()) -> Any:
        """The `result` of `method(params)`, or the typed exception of its error (chains.solana.errors)."""
        return self.rpc.call(method, list(params))

    def _error(self, method: str, error: dict[str, Any]) -> Exception:
        """The typed exception of an error object; NodeAnswerError when it lacks Agave's integer code and
        message (a bool is no code, though Python counts it an int)."""
        where = f"{self.rpc.shown_url()}: {method}"
        code, message = error.get("code"), error.get("message")
        if isinstance(code, bool):
            return NodeAnswerError(f"{where}: an error that is not a JSON-RPC error object")
        if not isinstance(code, int) or not isinstance(message, str):
            return NodeAnswerError(f"{where}: an error without an integer code and a message")
        return rpc_error(method, code, message, error.get("data"))

    # --- the chain -----------------------------------------------------------------------------------

    def slot(self, commitment: str = "finalized") -> int:
        return u64(self.call("getSlot", [_config(commitment)]), "getSlot")

    def block_height(self, commitment: str = "finalized") -> int:
        """The block height (not a slot) that `lastValidBlockHeight` is compared with."""
        return u64(self.call("getBlockHeight", [_config(commitment)]), "getBlockHeight")

    def latest_blockhash(self, commitment: str = "finalized") -> Blockhash:
        return Blockhash.parse(self.call("getLatestBlockhash", [_config(commitment)]))

    def balance(self, owner: str, commitment: str = "finalized") -> int:
        """The lamports of `owner` in the bank at `commitment`."""
        _, value = context_slot(self.call("getBalance", [_address(owner), _config(commitment)]), "getBalance")
        return u64(value, "getBalance.value")

    # --- history -------------------------------------------------------------------------------------

    def signatures_for_address(
        self,
        owner: str,
        *,
        before: str | None = None,
        until: str | None = None,
        limit: int = MAX_SIGNATURES_FOR_ADDRESS,
        commitment: str = "finalized",
    ) -> list[SignatureInfo]:
        """The transactions naming `owner` among their account keys, newest first: at most `limit`,
        older than `before` and newer than `until` (both excluded)."""
        if not 1 <= limit <= MAX_SIGNATURES_FOR_ADDRESS:
            raise ValueError(f"limit is 1 to {MAX_SIGNATURES_FOR_ADDRESS}")
        config: dict[str, Any] = {**_config(commitment, at_least_confirmed=True), "limit": limit}
        if before is not None:
            config["before"] = _signature(before)
        if until is not None:
            config["until"] = _signature(until)
        answer = array(
            self.call("getSignaturesForAddress", [_address(owner), config]), "getSignaturesForAddress"
        )
        if len(answer) > limit:
            raise NodeAnswerError(f"getSignaturesForAddress: {len(answer)} entries for a limit of {limit}")
        items = [SignatureInfo.parse(item, f"getSignaturesForAddress[{i}]") for i, item in enumerate(answer)]
        if any(a.slot < b.slot for a, b in itertools.pairwise(items)):
            raise NodeAnswerError("getSignaturesForAddress: not newest first")
        return items

    def transaction(self, txid: str, *, commitment: str = "finalized") -> ConfirmedTransaction | None:
        """Transaction `txid` (legacy or v0) once it is in a block at `commitment`, else None."""
        config = {
            **_config(commitment, at_least_confirmed=True),
            "encoding": "json",
            "maxSupportedTransactionVersion": 0,
        }
        answer = self.call("getTransaction", [_signature(txid), config])
        if answer is None:
            return None
        transaction = ConfirmedTransaction.parse(answer)
        if transaction.signature != txid:
            raise NodeAnswerError(f"getTransaction: asked for {txid}, answered {transaction.signature}")
        return transaction

    def signature_statuses(
        self, txids: Sequence[str], *, search_history: bool = False
    ) -> list[SignatureStatus | None]:
        """The status of each of `txids` (None: unknown to the node), in the same order. Without
        `search_history` a node looks only in its status cache (the last ~300 slots)."""
        if not 1 <= len(txids) <= MAX_SIGNATURE_STATUSES:
            raise ValueError(f"1 to {MAX_SIGNATURE_STATUSES} signatures a call")
        params = [[_signature(txid) for txid in txids], {"searchTransactionHistory": search_history}]
        _, value = context_slot(self.call("getSignatureStatuses", params), "getSignatureStatuses")
        statuses = array(value, "getSignatureStatuses.value")
        if len(statuses) != len(txids):
            raise NodeAnswerError(
                f"getSignatureStatuses: {len(statuses)} statuses for {len(txids)} signatures"
            )
        return [
            None if item is None else SignatureStatus.parse(item, f"getSignatureStatuses.value[{i}]")
            for i, item in enumerate(statuses)
        ]

    # --- sending and fees ----------------------------------------------------------------------------

    def send_transaction(
        self,
        transaction: bytes,
        *,
        skip_preflight: bool = False,
        preflight_commitment: str = "confirmed",
        max_retries: int | None = None,
    ) -> str:
        """Send a signed transaction (its wire bytes); its signature once the node took it, else a
        SendTransactionError (PreflightFailure, BlockhashNotFound, AlreadyProcessed...). Taken is not landed:
        follow it with signature_statuses until the blockhash's lastValidBlockHeight passes."""
        txid = first_signature(transaction)
        config: dict[str, Any] = {
            "encoding": "base64",
            "skipPreflight": skip_preflight,
            "preflightCommitment": _commitment(preflight_commitment),
        }
        if max_retries is not None:
            config["maxRetries"] = max_retries
        answer = self.call("sendTransaction", [base64.b64encode(transaction).decode(), config])
        if signature(answer, "sendTransaction") != txid:
            raise NodeAnswerError(f"sendTransaction: took {answer}, not {txid}")
        return txid

    def fee_for_message(self, message: bytes, *, commitment: str = "finalized") -> int | None:
        """What a transaction of `message` (its serialized bytes) would pay in lamports; None when the
        node no longer (or not yet) knows its blockhash."""
        params = [base64.b64encode(message).decode(), _config(commitment)]
        _, value = context_slot(self.call("getFeeForMessage", params), "getFeeForMessage")
        return optional_u64(value, "getFeeForMessage.value")

    def recent_prioritization_fees(self, writable: Sequence[str] = ()) -> list[PrioritizationFee]:
        """Each recent slot's least compute-unit price (micro-lamports), raised to the least price paid to
        write any of `writable` in it."""
        if len(writable) > MAX_PRIORITIZATION_ADDRESSES:
            raise ValueError(f"at most {MAX_PRIORITIZATION_ADDRESSES} addresses")
        params = [[_address(key) for key in writable]] if writable else []
        answer = array(self.call("getRecentPrioritizationFees", params), "getRecentPrioritizationFees")
        fees = []
        for i, item in enumerate(answer):
            where = f"getRecentPrioritizationFees[{i}]"
            item = obj(item, where)
            fees.append(
                PrioritizationFee(
                    u64(item.get("slot"), f"{where}.slot"),
                    u64(item.get("prioritizationFee"), f"{where}.prioritizationFee"),
                )
            )
        return fees


def first_signature(transaction: bytes) -> str:
    """The signature (the txid) of a signed transaction's wire bytes; ValueError if they are not one."""
    if len(transaction) > PACKET_DATA_SIZE:
        raise ValueError(f"a transaction is at most {PACKET_DATA_SIZE} bytes, not {len(transaction)}")
    signatures = VersionedTransaction.from_bytes(transaction).signatures
    if not signatures:
        raise ValueError("the transaction has no signature")
    return str(signatures[0])


def _commitment(commitment: str) -> str:
    if commitment not in COMMITMENTS:
        raise ValueError(f"a commitment is one of {', '.join(COMMITMENTS)}, not {commitment!r}")
    return commitment


def _config(commitment: str, *, at_least_confirmed: bool = False) -> dict[str, Any]:
    if at_least_confirmed and commitment == "processed":
        raise ValueError("this method reads confirmed or finalized blocks only")
    return {"commitment": _commitment(commitment)}


def _address(owner: str) -> str:
    """A base58 address (ValueError otherwise): never sent to the node unchecked."""
    return str(Pubkey.from_string(owner))


def _signature(txid: str) -> str:
    """A base58 signature (ValueError otherwise)."""
    return str(Signature.from_string(txid))

"""A client of a NEAR node's JSON-RPC (a node you run, or a provider's): only the methods Kassa uses, every
answer checked for nearcore's shape (chains.near.results), every error a typed exception
(chains.near.errors); what is not there (an unknown block, account, transaction...) is None.

Transport: chains.jsonrpc (one POST per call, answers read with limits, numbers exact). The optional API
key goes in the `x-api-key` header. Reads of state ask for `final` unless told otherwise: Kassa decides on
final blocks only.

Waiting: nearcore's `wait_until` makes the node hold the request up to ~10 s, then answer TIMEOUT_ERROR.
Kassa never waits on the node: it asks with "NONE" and reads `final_execution_status` itself, so a worker
is never held by a slow chain and a transaction's level is read, not awaited.
"""

from __future__ import annotations

import base64
from typing import Any

import requests

from chains.jsonrpc import READ_TIMEOUT_SECONDS, JsonRpcClient
from chains.near.errors import NearNodeUnavailable, NotFound, rpc_error
from chains.near.results import AccessKey, Account, Block, Chunk, Outcome, TxResult, obj, u64, u128

API_KEY_HEADER = "x-api-key"
MAX_TRANSACTION_BYTES = 1_572_864  # nearcore's max_transaction_size (1.5 MiB): bigger is never ours


class NearNode:
    """One NEAR JSON-RPC endpoint. `api_key`: sent as `x-api-key` when given."""

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
            unavailable=NearNodeUnavailable,
            error=rpc_error,
            headers={API_KEY_HEADER: api_key} if api_key else None,
            timeout=timeout,
            session=session,
        )
        self.url = url

    def call(self, method: str, params: dict[str, Any]) -> Any:
        """The result; a "not found" where nothing can be missing (the final block while the node syncs,
        send_tx's UNKNOWN_BLOCK...) is the node not able to answer now, a ChainUnavailable, never an
        untyped error escaping a scan or a payout."""
        try:
            return self.rpc.call(method, params)
        except NotFound as exc:
            raise NearNodeUnavailable(str(exc)) from exc

    def _found(self, method: str, params: dict[str, Any]) -> Any:
        """The result, or None when the node says it does not know what was asked (yet)."""
        try:
            return self.rpc.call(method, params)
        except NotFound:
            return None

    # --- blocks --------------------------------------------------------------------------------------

    def final_block(self) -> Block:
        return Block.parse(self.call("block", {"finality": "final"}))

    def head_block(self) -> Block:
        return Block.parse(self.call("block", {"finality": "optimistic"}))

    def block(self, block_id: int | str) -> Block | None:
        """The block at a height (None: the height was skipped, or is not produced yet) or of a hash."""
        found = self._found("block", {"block_id": block_id})
        return None if found is None else Block.parse(found)

    def chunk(self, chunk_hash: str) -> Chunk | None:
        found = self._found("chunk", {"chunk_id": chunk_hash})
        return None if found is None else Chunk.parse(found)

    # --- transactions and receipts -------------------------------------------------------------------

    def tx_status(self, tx_hash: str, sender: str) -> TxResult | None:
        """The transaction's outcome and its receipts' as the node knows them now (never waited for)."""
        found = self._found(
            "EXPERIMENTAL_tx_status", {"tx_hash": tx_hash, "sender_account_id": sender, "wait_until": "NONE"}
        )
        if found is None or obj(found, "tx_status").get("transaction") is None:
            return None  # "NONE" answered for a transaction only received, not yet included
        return TxResult.parse(found)

    def receipt_outcome(self, receipt_id: str, receiver_id: str, head: str) -> Outcome | None:
        """The outcome of a receipt executed in a block at or below `head` (a final block's hash), by the
        light-client proof (the only RPC that gives a receipt's outcome without its transaction: a
        contract's receipt has none of ours to ask); None while it is not executed there."""
        found = self._found(
            "EXPERIMENTAL_light_client_proof",
            {
                "type": "receipt",
                "receipt_id": receipt_id,
                "receiver_id": receiver_id,
                "light_client_head": head,
            },
        )
        if found is None:
            return None
        return Outcome.parse(obj(found, "light_client_proof").get("outcome_proof"), "outcome_proof")

    def send_tx(self, signed: bytes) -> None:
        """Hand a signed transaction to the node (NearTxRefused when it refuses it as it is)."""
        if len(signed) > MAX_TRANSACTION_BYTES:
            raise ValueError("a transaction of Kassa's is never this large")
        self.call("send_tx", {"signed_tx_base64": base64.b64encode(signed).decode(), "wait_until": "NONE"})

    def genesis_validity(self) -> int:
        """The chain's `transaction_validity_period` (blocks): a transaction whose block_hash is older than
        this is invalid (86400 on mainnet and testnet)."""
        genesis = obj(self.call("EXPERIMENTAL_genesis_config", {}), "genesis_config")
        return u64(genesis.get("transaction_validity_period"), "genesis_config.transaction_validity_period")

    def gas_price(self) -> int:
        """The gas price of the latest block, in yoctoNEAR a gas unit."""
        return u128(
            obj(self.call("gas_price", {"block_id": None}), "gas_price").get("gas_price"), "gas_price"
        )

    # --- state ---------------------------------------------------------------------------------------

    def account(self, account_id: str, finality: str = "final") -> Account | None:
        found = self._found(
            "query", {"request_type": "view_account", "account_id": account_id, "finality": finality}
        )
        return None if found is None else Account.parse(found)

    def access_key(self, account_id: str, public_key: str, finality: str = "final") -> AccessKey | None:
        found = self._found(
            "query",
            {
                "request_type": "view_access_key",
                "account_id": account_id,
                "public_key": public_key,
                "finality": finality,
            },
        )
        if found is None or _unknown_access_key(found):
            return None
        return AccessKey.parse(found)


def _unknown_access_key(found: Any) -> bool:
    """nearcore answers an unknown access key as a RESULT, not an error, for backward compatibility
    (chain/jsonrpc/src/lib.rs, process_query_response): {"error": "access key ed25519:... does not exist
    while viewing", "logs": [], "block_height", "block_hash"}. Any other "error" result is no key's shape."""
    error = obj(found, "view_access_key").get("error")
    return isinstance(error, str) and error.startswith("access key ") and "does not exist" in error

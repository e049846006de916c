"""Reaching a code's node and its wallets: one RpcClient per node URL, made on first use, and wallets loaded
(or, for Kassa's own watch-only deposit wallet, created) when the node has not loaded them.

A node loads at start-up only the wallets marked to load; every other one answers -18 until `loadwallet`.
Two workers may load or create the same wallet at once: the loser's "already loaded" / "already exists"
answer means the wallet is there, and is not an error.
"""

from __future__ import annotations

import threading
from typing import Any

from chains.base import PayoutHeld
from chains.bitcoincore.rpc import RpcClient, RpcError
from chains.nodes import NodeConfig, node_config
from payments.assets import get_asset

# Node error codes (src/rpc/protocol.h).
RPC_INVALID_PARAMETER = -8
RPC_INVALID_ADDRESS_OR_KEY = -5  # also: "Invalid or non-wallet transaction id", "Transaction not in mempool"
RPC_WALLET_ERROR = -4  # litecoind 0.21 also answers "Insufficient funds" and "already loaded" with it
RPC_WALLET_INSUFFICIENT_FUNDS = -6
RPC_WALLET_UNLOCK_NEEDED = -13
RPC_WALLET_NOT_FOUND = -18
RPC_WALLET_ALREADY_LOADED = -35  # Bitcoin Core 22+; litecoind 0.21 says it with -4
RPC_VERIFY_ERROR = -25
RPC_VERIFY_REJECTED = -26
RPC_VERIFY_ALREADY_IN_CHAIN = -27


class PayoutWalletMissing(PayoutHeld):
    kind = "payout_wallet_missing"
    reason = "The payout wallet is missing"


def _already_there(exc: RpcError) -> bool:
    text = exc.message.lower()
    return exc.code == RPC_WALLET_ALREADY_LOADED or "already loaded" in text or "already exists" in text


class NodeAccess:
    """The node and wallets behind each code (CHAIN_NODES); one instance serves every code."""

    def __init__(self) -> None:
        self._clients: dict[str, RpcClient] = {}
        self._lock = threading.Lock()

    def _config(self, code: str) -> NodeConfig:
        return node_config(get_asset(code).code)

    def _node(self, code: str) -> RpcClient:
        url = self._config(code).url
        with self._lock:
            if url not in self._clients:
                self._clients[url] = RpcClient(url)
            return self._clients[url]

    def _deposits(self, code: str) -> Wallet:
        return Wallet(self, code, self._config(code).deposit_wallet, create=True)

    def _payouts(self, code: str) -> Wallet:
        return Wallet(self, code, self._config(code).payout_wallet, create=False)

    def _load_or_create(self, code: str, name: str, *, create: bool = True) -> bool:
        """Load the wallet; create the watch-only deposit wallet when it does not exist (True: created);
        a missing payout wallet holds payouts."""
        node = self._node(code)
        if name in node.call("listwallets"):
            return False
        try:
            node.call("loadwallet", name)
            return False
        except RpcError as exc:
            if _already_there(exc):
                return False
            if exc.code != RPC_WALLET_NOT_FOUND:
                raise
            if not create:
                raise PayoutWalletMissing(f"the node has no wallet {name!r}; create and fund it") from exc
        try:
            # Watch-only and blank: no private key ever. btc and ltc: loaded whenever the node starts, and
            # a descriptor wallet wherever the node makes one by default (null: the node's default).
            if get_asset(code).family == "bch":
                node.call("createwallet", name, True, True)
            else:
                node.call("createwallet", name, True, True, "", False, None, True)
        except RpcError as exc:
            if not _already_there(exc):
                raise
            try:  # another worker created it first
                node.call("loadwallet", name)
            except RpcError as again:
                if not _already_there(again):
                    raise
            return False
        self._created(code)
        return True

    def _created(self, code: str) -> None:
        """Called after the deposit wallet was created (a subclass watches what was watched before)."""


class Wallet:
    """Calls to one node wallet; a wallet the node has not loaded (it restarted) is loaded and the call
    made again."""

    def __init__(self, access: NodeAccess, code: str, name: str, *, create: bool) -> None:
        self._access, self._code, self.name, self._create = access, code, name, create

    def call(self, method: str, *params: Any) -> Any:
        client = self._access._node(self._code).wallet(self.name)
        try:
            return client.call(method, *params)
        except RpcError as exc:
            if exc.code != RPC_WALLET_NOT_FOUND:
                raise
        self._access._load_or_create(self._code, self.name, create=self._create)
        return client.call(method, *params)

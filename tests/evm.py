"""The one helper for moving money on an EVM chain in tests: an in-process eth-tester chain (py-evm) or a
node over HTTP (hardhat), with the evm backend configured on it; paying, token transfers, mining,
snapshots and reverts go through `EvmChain`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

from eth_tester import EthereumTester, PyEVMBackend
from web3 import Web3

from chains.backend import get_backend
from chains.evm.backend import EvmBackend
from chains.evm.node import hot_address, to_units
from chains.scanning import chain_scan

TESTER_URL = "http://eth-tester.invalid:8545"  # never dialled: the backend is handed the in-process chain


class EvmChain:
    """A chain with a rich account (`payer`), the hot address funded, and an ERC-20 with 6 decimals."""

    def __init__(self, w3: Web3, url: str, *, tester: EthereumTester | None = None) -> None:
        self.w3, self.url, self.tester = w3, url, tester
        self.payer = w3.eth.accounts[0]
        self.chain_id = int(w3.eth.chain_id)
        self.token: Any = None

    # --- configuration ---------------------------------------------------------------------------------

    def nodes(self, *, token: bool = True, **extra: Any) -> dict[str, Any]:
        """CHAIN_NODES for eth (and usdterc20 on the fixture token) on this chain."""
        common = {"url": self.url, "chain_id": self.chain_id, "priority_fee_gwei": "1", **extra}
        nodes: dict[str, Any] = {"eth": dict(common, sweep_min="0.001")}
        if token:
            nodes["usdterc20"] = dict(common, contract=self.token.address, decimals=6, sweep_min="1")
        return nodes

    def backend(self) -> EvmBackend:
        backend = get_backend("eth")
        assert isinstance(backend, EvmBackend)
        backend.use_web3(self.url, self.w3)
        return backend

    # --- money -------------------------------------------------------------------------------------------

    def deploy_token(self) -> Any:
        from chains.evm.contracts import TOKEN_ABI, TOKEN_BYTECODE

        factory = self.w3.eth.contract(abi=TOKEN_ABI, bytecode=TOKEN_BYTECODE)
        txid = factory.constructor("Tether USD", "USDT", 6).transact({"from": self.payer})
        receipt = self.w3.eth.wait_for_transaction_receipt(txid)
        self.token = self.w3.eth.contract(address=receipt["contractAddress"], abi=TOKEN_ABI)
        self.token.functions.mint(self.payer, to_units(Decimal(1_000_000), 6)).transact({"from": self.payer})
        return self.token

    def pay(self, to: str, amount: Decimal | str) -> str:
        """Send `amount` ETH to `to`; mined at once (eth-tester and hardhat automine)."""
        value = to_units(Decimal(amount), 18)
        txid = self.w3.eth.send_transaction(
            {"from": self.payer, "to": Web3.to_checksum_address(to), "value": value}
        )
        return Web3.to_hex(txid)

    def pay_token(self, to: str, amount: Decimal | str) -> str:
        units = to_units(Decimal(amount), 6)
        txid = self.token.functions.transfer(Web3.to_checksum_address(to), units).transact(
            {"from": self.payer}
        )
        return Web3.to_hex(txid)

    def fund_hot(self, eth: Decimal | str = "10", tokens: Decimal | str = "0") -> None:
        self.pay(hot_address(), eth)
        if Decimal(tokens):
            self.pay_token(hot_address(), tokens)

    def balance(self, address: str) -> Decimal:
        return Decimal(self.w3.eth.get_balance(Web3.to_checksum_address(address))) / Decimal(10) ** 18

    def token_balance(self, address: str) -> Decimal:
        units = self.token.functions.balanceOf(Web3.to_checksum_address(address)).call()
        return Decimal(units).scaleb(-6)

    def mine(self, blocks: int = 1) -> None:
        if self.tester is not None:
            self.tester.mine_blocks(blocks)
        else:
            self.w3.provider.make_request("hardhat_mine", [hex(blocks)])  # type: ignore[arg-type]

    def scan(self, blocks: int = 0) -> int:
        """Mine `blocks` and run one ingestion cycle of the chain (it scans every code on it)."""
        if blocks:
            self.mine(blocks)
        return chain_scan("eth")

    @contextmanager
    def reorg(self) -> Iterator[None]:
        """What happens inside is undone: the chain returns to the snapshot (same heights, new hashes once
        mined again)."""
        if self.tester is not None:
            snapshot = self.tester.take_snapshot()
            yield
            self.tester.revert_to_snapshot(snapshot)
        else:
            snapshot = self.w3.provider.make_request("evm_snapshot", [])["result"]  # type: ignore[arg-type]
            yield
            self.w3.provider.make_request("evm_revert", [snapshot])  # type: ignore[arg-type]


def eth_tester_chain() -> EvmChain:
    tester = EthereumTester(PyEVMBackend())
    w3 = Web3(Web3.EthereumTesterProvider(tester))
    return EvmChain(w3, TESTER_URL, tester=tester)

"""The EVM backend's plumbing: one web3 client per node, units, the hot address, raw transactions."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import ROUND_DOWN, Decimal
from typing import Any

import requests
from eth_account.typed_transactions import TypedTransaction
from hexbytes import HexBytes
from web3 import Web3

from chains.answers import limited_session
from chains.base import BlockRef, ChainUnavailable
from chains.derivation import derive_internal_address
from chains.evm.config import EvmConfig, chain_codes, evm_config
from chains.evm.contracts import ERC20_ABI
from core.assets import get_asset
from core.money import quantize

# Encodes and decodes the ERC-20 calls and events the backend uses (no node needed for that).
ERC20 = Web3().eth.contract(abi=ERC20_ABI)
TRANSFER_TOPIC = str(ERC20.events.Transfer().topic)  # "0x" + keccak of the signature
NATIVE_GAS = 21_000


def hot_address() -> str:
    """The EVM hot address (checksummed): m/44'/60'/0'/1/0 of the configured account key."""
    return derive_internal_address("evm", 0)


def to_units(amount: Decimal, decimals: int) -> int:
    units = amount.scaleb(decimals)
    if units != units.to_integral_value():
        raise ValueError(f"{amount} has more than {decimals} decimal places")
    return int(units)


def coin(units: int, decimals: int = 18) -> Decimal:
    """`units` of the chain's smallest unit (wei; 9 decimals: gwei) in the coin, exactly."""
    return Decimal(units).scaleb(-decimals)


def from_units(units: int, decimals: int, places: int) -> Decimal:
    """An amount in the coin, cut to the asset's `places` (ROUND_DOWN: never credit more than arrived)."""
    return quantize(coin(units, decimals), decimals=places, rounding=ROUND_DOWN)


def transfer_call(config: EvmConfig, to: str, amount: Decimal) -> dict[str, Any]:
    """`to`, `value` and `data` of a transfer of `amount` of the code to `to`."""
    to = Web3.to_checksum_address(to)
    if config.contract is None:
        return {"to": to, "value": to_units(amount, 18), "data": "0x"}
    units = to_units(amount, config.decimals)
    return {
        "to": Web3.to_checksum_address(config.contract),
        "value": 0,
        "data": ERC20.encode_abi("transfer", args=[to, units]),
    }


class EvmNode:
    """One web3 client per node url; a node that cannot be reached is ChainUnavailable."""

    def __init__(self) -> None:
        self._clients: dict[str, Web3] = {}
        self._receipts_by_block: dict[str, bool] = {}  # url -> the node answers eth_getBlockReceipts
        self._lock = threading.Lock()

    def use_web3(self, url: str, w3: Web3) -> None:
        """Talk to `url` through `w3` (tests: an in-process eth-tester chain)."""
        with self._lock:
            self._clients[url] = w3

    def w3(self, code: str) -> Web3:
        url = evm_config(code).url
        with self._lock:
            if url not in self._clients:
                # Answers capped in size and depth before web3 parses them (chains.answers).
                provider = Web3.HTTPProvider(url, request_kwargs={"timeout": 15}, session=limited_session())
                self._clients[url] = Web3(provider)
            return self._clients[url]

    @contextmanager
    def _node(self, code: str) -> Iterator[Web3]:
        """The node of `code`; it being down, unreachable or on the wrong chain is ChainUnavailable."""
        try:
            yield self.w3(code)
        except (requests.ConnectionError, requests.Timeout, ConnectionError, TimeoutError) as exc:
            raise ChainUnavailable(f"{code} node: {type(exc).__name__}") from None

    def scan_codes(self, code: str) -> list[str]:
        """The codes scanned together with `code` (one chain, one cursor); the first leads."""
        return chain_codes(evm_config(code).chain)

    def tip(self, code: str) -> BlockRef:
        with self._node(code) as w3:
            block = w3.eth.get_block("latest")
        return BlockRef(int(block["number"]), Web3.to_hex(block["hash"]))

    def cursor_at(self, code: str, height: int) -> dict[str, Any]:
        return {"height": max(height, -1), "blocks": []}

    def explorer_url(self, code: str, txid: str) -> str:
        template = get_asset(code).explorer_tx_url
        return template.format(txid=txid) if evm_config(code).chain_id in (1, 56) and template else txid

    def token_balance(self, w3: Web3, config: EvmConfig, owner: str) -> int:
        token = w3.eth.contract(address=Web3.to_checksum_address(config.contract or ""), abi=ERC20_ABI)
        return int(token.functions.balanceOf(Web3.to_checksum_address(owner)).call())


def decode_raw(raw: str) -> dict[str, Any]:
    """The fields of a signed EIP-1559 transaction (to re-sign it with other fees)."""
    typed = TypedTransaction.from_bytes(HexBytes(raw))
    fields = typed.as_dict()
    return {
        "type": 2,
        "chainId": int(fields["chainId"]),
        "nonce": int(fields["nonce"]),
        "gas": int(fields["gas"]),
        "maxFeePerGas": int(fields["maxFeePerGas"]),
        "maxPriorityFeePerGas": int(fields["maxPriorityFeePerGas"]),
        "to": Web3.to_checksum_address(fields["to"]),
        "value": int(fields["value"]),
        "data": "0x" + bytes(fields["data"]).hex(),
    }

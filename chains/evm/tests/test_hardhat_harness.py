"""The hardhat harness itself (tests/hardhat_node.py): a real hardhat@2 node starts, answers as chain 31337,
moves ETH from its unlocked rich account, and is gone (process group and port) after the context exits."""

from __future__ import annotations

import os

import pytest
from eth_account import Account
from web3 import Web3

from tests.hardhat_node import group_alive, hardhat_node

pytestmark = pytest.mark.hardhat


def test_a_hardhat_node_starts_pays_and_stops() -> None:
    with hardhat_node() as node:
        assert node.w3.eth.chain_id == 31337
        assert node.w3.eth.accounts[0] == node.rich
        fresh = Account.create().address
        txid = node.w3.eth.send_transaction(
            {"from": node.rich, "to": fresh, "value": Web3.to_wei(1, "ether")}
        )
        assert node.w3.eth.wait_for_transaction_receipt(txid, timeout=30)["status"] == 1
        assert node.w3.eth.get_balance(fresh) == 10**18
        pid = node.pid
        assert group_alive(pid)
    assert not group_alive(pid)
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)
    assert not node.w3.is_connected()

"""The committed ERC-20 test fixture (chains/evm/contracts): compiled from the committed Token.vy, and a
working 6-decimal token on an in-process chain (eth-tester with py-evm) whose blacklist makes a transfer
mine with status 0."""

from __future__ import annotations

from typing import Any

import web3

from chains.evm.contracts import ERC20_ABI, TOKEN_ABI, TOKEN_BYTECODE, source_matches


def deployed() -> tuple[web3.Web3, Any]:
    """A fresh in-process chain and the fixture token on it, deployed (so owned) by accounts[0]."""
    w3 = web3.Web3(web3.Web3.EthereumTesterProvider())
    factory = w3.eth.contract(abi=TOKEN_ABI, bytecode=TOKEN_BYTECODE)
    txid = factory.constructor("Tether USD", "USDT", 6).transact({"from": w3.eth.accounts[0]})
    receipt = w3.eth.wait_for_transaction_receipt(txid)
    assert receipt["status"] == 1
    return w3, w3.eth.contract(address=receipt["contractAddress"], abi=TOKEN_ABI)


def test_the_fixture_was_compiled_from_the_committed_source() -> None:
    assert source_matches(), "Token.vy changed: recompile it (see scripts/compile_token.py)"


def test_the_token_mints_transfers_and_logs() -> None:
    w3, token = deployed()
    owner, holder, receiver = w3.eth.accounts[:3]
    assert (token.functions.name().call(), token.functions.symbol().call()) == ("Tether USD", "USDT")
    assert token.functions.decimals().call() == 6
    assert token.functions.owner().call() == owner

    minted = w3.eth.wait_for_transaction_receipt(
        token.functions.mint(holder, 5_000_000).transact({"from": owner})
    )
    [log] = token.events.Transfer().process_receipt(minted)
    assert log["args"]["sender"] == "0x" + "00" * 20
    assert token.functions.totalSupply().call() == 5_000_000

    txid = token.functions.transfer(receiver, 1_000_000).transact({"from": holder})
    receipt = w3.eth.wait_for_transaction_receipt(txid)
    assert receipt["status"] == 1
    assert token.functions.balanceOf(holder).call() == 4_000_000
    assert token.functions.balanceOf(receiver).call() == 1_000_000

    [log] = token.events.Transfer().process_receipt(receipt)
    assert log["address"] == token.address
    assert (log["args"]["sender"], log["args"]["receiver"], log["args"]["value"]) == (
        holder,
        receiver,
        1_000_000,
    )
    # The indexed arguments are the topics the backend filters on, under the standard ERC-20 ABI too.
    [raw] = receipt["logs"]
    assert [bytes(topic)[-20:] for topic in raw["topics"][1:]] == [
        bytes.fromhex(a[2:]) for a in (holder, receiver)
    ]
    standard = w3.eth.contract(address=token.address, abi=ERC20_ABI)
    [log] = standard.events.Transfer().process_receipt(receipt)
    assert (log["args"]["from"], log["args"]["to"], log["args"]["value"]) == (holder, receiver, 1_000_000)
    assert standard.functions.balanceOf(receiver).call() == 1_000_000


def test_a_transfer_from_or_to_a_blocked_account_is_mined_with_status_0() -> None:
    w3, token = deployed()
    owner, holder, receiver = w3.eth.accounts[:3]
    token.functions.mint(holder, 5_000_000).transact({"from": owner})
    token.functions.block(holder, True).transact({"from": owner})
    assert token.functions.blocked(holder).call()

    # An explicit gas limit, so that web3 sends it instead of refusing at estimate_gas.
    txid = token.functions.transfer(receiver, 1_000_000).transact({"from": holder, "gas": 100_000})
    receipt = w3.eth.wait_for_transaction_receipt(txid)
    assert receipt["status"] == 0
    assert receipt["logs"] == []
    assert token.functions.balanceOf(holder).call() == 5_000_000

    token.functions.block(holder, False).transact({"from": owner})
    token.functions.block(receiver, True).transact({"from": owner})
    txid = token.functions.transfer(receiver, 1_000_000).transact({"from": holder, "gas": 100_000})
    assert w3.eth.wait_for_transaction_receipt(txid)["status"] == 0
    assert token.functions.balanceOf(receiver).call() == 0


def test_only_the_owner_mints_and_blocks_and_no_one_overspends() -> None:
    w3, token = deployed()
    owner, holder, receiver = w3.eth.accounts[:3]
    for call in (token.functions.mint(holder, 1), token.functions.block(owner, True)):
        txid = call.transact({"from": holder, "gas": 100_000})
        assert w3.eth.wait_for_transaction_receipt(txid)["status"] == 0
    token.functions.mint(holder, 10).transact({"from": owner})
    txid = token.functions.transfer(receiver, 11).transact({"from": holder, "gas": 100_000})
    assert w3.eth.wait_for_transaction_receipt(txid)["status"] == 0
    token.functions.approve(receiver, 5).transact({"from": holder})
    txid = token.functions.transferFrom(holder, receiver, 6).transact({"from": receiver, "gas": 100_000})
    assert w3.eth.wait_for_transaction_receipt(txid)["status"] == 0
    token.functions.transferFrom(holder, receiver, 5).transact({"from": receiver})
    assert token.functions.balanceOf(receiver).call() == 5
    assert token.functions.allowance(holder, receiver).call() == 0

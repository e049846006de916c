"""TRC-20 calls over HTTP: Transfer logs in receipts, Tether's blacklist (REVERT), fee_limit and
OUT_OF_ENERGY, energy from stake and Stake 2.0 delegation, read-only calls."""

from __future__ import annotations

from eth_utils import keccak

from tests.tron_devnet.fixtures import DevnetClient
from tests.tron_devnet.keys import Key

TRX = 1_000_000
USDT = 1_000_000
TRANSFER_TOPIC = keccak(text="Transfer(address,address,uint256)").hex()


def energy_fee(devnet: DevnetClient) -> int:
    parameters = devnet.post("wallet/getchainparameters")["chainParameter"]
    return next(p["value"] for p in parameters if p["key"] == "getEnergyFee")


def test_a_trc20_transfer_logs_its_transfer_and_burns_trx_for_energy(tron_devnet: DevnetClient) -> None:
    alice, deposit = tron_devnet.accounts["alice"], Key.from_seed("deposit")
    tx = alice.sign(tron_devnet.token_transfer(alice, deposit.address, 25 * USDT))

    assert tron_devnet.send(tx)["result"] is True
    mined = tron_devnet.mine()

    info = tron_devnet.info_by_id(tx["txID"])
    receipt = info["receipt"]
    assert receipt["result"] == "SUCCESS" and "result" not in info
    assert 10_000 < receipt["energy_usage_total"] < 100_000
    assert receipt["energy_fee"] == receipt["energy_usage_total"] * energy_fee(tron_devnet) == info["fee"]
    assert info["blockNumber"] == mined["head"]
    assert info["contract_address"] == tron_devnet.info["token"]["hex"]
    [log] = info["log"]
    assert log["address"] == tron_devnet.info["token"]["hex"][2:]  # without the 41
    assert log["topics"] == [TRANSFER_TOPIC, Key.abi_address(alice.address), Key.abi_address(deposit.address)]
    assert int(log["data"], 16) == 25 * USDT
    assert tron_devnet.token_balance(deposit.address) == 25 * USDT
    assert tron_devnet.balance(alice.address) == 100_000 * TRX - info["fee"]
    [included] = tron_devnet.post("wallet/getblockbynum", {"num": mined["head"]})["transactions"]
    assert included["ret"] == [{"contractRet": "SUCCESS"}]
    assert included["raw_data"]["fee_limit"] == 100_000_000
    assert tron_devnet.post("wallet/gettransactioninfobyblocknum", {"num": mined["head"]}) == [info]


def test_trongrid_history_lists_the_transfer_once_confirmed(tron_devnet: DevnetClient) -> None:
    alice, deposit = tron_devnet.accounts["alice"], Key.from_seed("deposit")
    tx = alice.sign(tron_devnet.token_transfer(alice, deposit.address, 7 * USDT))
    tron_devnet.send(tx)
    tron_devnet.mine()
    path = f"v1/accounts/{deposit.address}/transactions/trc20"
    confirmed = {"only_to": "true", "only_confirmed": "true", "contract_address": tron_devnet.token}

    before = tron_devnet.get(path, confirmed)
    unconfirmed = tron_devnet.get(path, {"only_to": "true"})
    tron_devnet.mine(19)
    after = tron_devnet.get(path, confirmed)

    assert before["data"] == [] and before["success"] is True
    assert [t["transaction_id"] for t in unconfirmed["data"]] == [tx["txID"]]
    [transfer] = after["data"]
    assert transfer["from"] == alice.address and transfer["to"] == deposit.address
    assert transfer["value"] == str(7 * USDT) and transfer["type"] == "Transfer"
    assert transfer["token_info"] == {
        "symbol": "USDT",
        "address": tron_devnet.token,
        "decimals": 6,
        "name": "Tether USD",
    }
    assert (
        tron_devnet.get(f"v1/accounts/{alice.address}/transactions/trc20", {"only_to": "true"})["data"] == []
    )


def test_a_transfer_from_a_blacklisted_address_reverts_and_still_pays(tron_devnet: DevnetClient) -> None:
    bob, carol = tron_devnet.accounts["bob"], tron_devnet.accounts["carol"]
    tron_devnet.blacklist(bob.address)
    tron_devnet.mine()
    tx = bob.sign(tron_devnet.token_transfer(bob, carol.address, USDT))
    to_blacklisted = carol.sign(tron_devnet.token_transfer(carol, bob.address, USDT))

    assert tron_devnet.send(tx)["result"] is True  # a node accepts it; the EVM reverts it
    tron_devnet.send(to_blacklisted)
    mined = tron_devnet.mine()

    info = tron_devnet.info_by_id(tx["txID"])
    assert info["result"] == "FAILED" and info["receipt"]["result"] == "REVERT"
    assert bytes.fromhex(info["resMessage"]).decode() == "REVERT opcode executed"
    assert "log" not in info and info["fee"] > 0
    assert b"blacklisted" in bytes.fromhex(info["contractResult"][0])
    assert tron_devnet.token_balance(bob.address) == 10_001 * USDT  # what carol sent: receiving still works
    assert tron_devnet.balance(bob.address) == 100_000 * TRX - info["fee"]
    block = tron_devnet.post("wallet/getblockbynum", {"num": mined["head"]})
    assert [t["ret"][0]["contractRet"] for t in block["transactions"]] == ["REVERT", "SUCCESS"]
    tron_devnet.blacklist(bob.address, blacklisted=False)
    tron_devnet.mine()
    again = bob.sign(tron_devnet.token_transfer(bob, carol.address, USDT))
    tron_devnet.send(again)
    tron_devnet.mine()
    assert tron_devnet.info_by_id(again["txID"])["receipt"]["result"] == "SUCCESS"


def test_a_fee_limit_too_low_is_out_of_energy_included_and_burnt(tron_devnet: DevnetClient) -> None:
    alice, carol = tron_devnet.accounts["alice"], tron_devnet.accounts["carol"]
    price = energy_fee(tron_devnet)
    tx = alice.sign(tron_devnet.token_transfer(alice, carol.address, USDT, fee_limit=1_000 * price))

    assert tron_devnet.send(tx)["result"] is True
    mined = tron_devnet.mine()

    info = tron_devnet.info_by_id(tx["txID"])
    assert info["blockNumber"] == mined["head"]
    assert info["result"] == "FAILED" and info["receipt"]["result"] == "OUT_OF_ENERGY"
    assert info["receipt"]["energy_usage_total"] == 1_000
    assert info["receipt"]["energy_fee"] == info["fee"] == 1_000 * price  # the whole fee_limit is gone
    assert tron_devnet.token_balance(carol.address) == 10_000 * USDT  # the state was reverted
    assert tron_devnet.balance(alice.address) == 100_000 * TRX - 1_000 * price


def test_a_deposit_address_with_no_trx_runs_out_of_energy(tron_devnet: DevnetClient) -> None:
    alice, deposit = tron_devnet.accounts["alice"], Key.from_seed("deposit")
    tron_devnet.fund(deposit.address, sun=TRX, token=5 * USDT)
    tron_devnet.mine()
    spend = deposit.sign(tron_devnet.transfer(deposit, alice.address, TRX))  # 0 TRX left, free bandwidth
    tron_devnet.send(spend)
    tron_devnet.mine(skip_seconds=86_400)  # a day later: the free bandwidth has recovered
    assert tron_devnet.balance(deposit.address) == 0

    sweep = deposit.sign(tron_devnet.token_transfer(deposit, alice.address, 5 * USDT))
    tron_devnet.send(sweep)
    tron_devnet.mine()

    info = tron_devnet.info_by_id(sweep["txID"])
    assert info["receipt"]["result"] == "OUT_OF_ENERGY" and "fee" not in info
    assert tron_devnet.token_balance(deposit.address) == 5 * USDT


def test_staked_energy_pays_first_but_fee_limit_still_caps_it(tron_devnet: DevnetClient) -> None:
    alice, carol = tron_devnet.accounts["alice"], tron_devnet.accounts["carol"]
    tron_devnet.stake(alice.address, 10_000 * TRX)  # 100,000 energy
    resource = tron_devnet.post("wallet/getaccountresource", {"address": alice.address, "visible": True})
    staked = alice.sign(tron_devnet.token_transfer(alice, carol.address, USDT))
    capped = alice.sign(tron_devnet.token_transfer(alice, carol.address, USDT, fee_limit=420))

    tron_devnet.send(staked)
    tron_devnet.send(capped)
    tron_devnet.mine()

    assert resource["EnergyLimit"] == 100_000
    receipt = tron_devnet.info_by_id(staked["txID"])["receipt"]
    assert receipt["energy_usage"] == receipt["energy_usage_total"] and "energy_fee" not in receipt
    assert tron_devnet.info_by_id(capped["txID"])["receipt"]["result"] == "OUT_OF_ENERGY"


def test_delegated_energy_pays_for_a_sweep_until_undelegated(tron_devnet: DevnetClient) -> None:
    bob, deposit = tron_devnet.accounts["bob"], Key.from_seed("deposit")
    tron_devnet.fund(deposit.address, sun=TRX, token=50 * USDT)
    tron_devnet.mine()
    body = {
        "owner_address": bob.address,
        "receiver_address": deposit.address,
        "balance": 5_000 * TRX,
        "resource": "ENERGY",
        "visible": True,
    }
    unstaked = tron_devnet.post("wallet/delegateresource", body)
    tron_devnet.stake(bob.address, 5_000 * TRX)

    delegate = bob.sign(tron_devnet.post("wallet/delegateresource", body))
    assert tron_devnet.send(delegate)["result"] is True
    tron_devnet.mine()
    sweep = deposit.sign(tron_devnet.token_transfer(deposit, bob.address, 10 * USDT))
    tron_devnet.send(sweep)
    tron_devnet.mine()

    assert "available FreezeV2 balance" in unstaked["Error"]
    assert delegate["raw_data"]["contract"][0]["type"] == "DelegateResourceContract"
    receipt = tron_devnet.info_by_id(sweep["txID"])["receipt"]
    assert receipt["result"] == "SUCCESS"
    assert receipt["energy_usage"] == receipt["energy_usage_total"] > 10_000 and "energy_fee" not in receipt
    account = tron_devnet.post("wallet/getaccount", {"address": deposit.address, "visible": True})
    assert account["account_resource"]["acquired_delegated_frozenV2_balance_for_energy"] == 5_000 * TRX
    undelegate = bob.sign(tron_devnet.post("wallet/undelegateresource", body))
    tron_devnet.send(undelegate)
    tron_devnet.mine()
    resource = tron_devnet.post("wallet/getaccountresource", {"address": deposit.address, "visible": True})
    assert "EnergyLimit" not in resource
    too_much = tron_devnet.post("wallet/undelegateresource", body)
    assert "insufficient delegatedFrozenBalance(Energy)" in too_much["Error"]


def test_freeze_balance_v2_stakes_by_transaction(tron_devnet: DevnetClient) -> None:
    carol = tron_devnet.accounts["carol"]
    body = {
        "owner_address": carol.address,
        "frozen_balance": 1_000 * TRX,
        "resource": "ENERGY",
        "visible": True,
    }
    tx = carol.sign(tron_devnet.post("wallet/freezebalancev2", body))

    tron_devnet.send(tx)
    tron_devnet.mine()

    account = tron_devnet.post("wallet/getaccount", {"address": carol.address, "visible": True})
    assert {"type": "ENERGY", "amount": 1_000 * TRX} in account["frozenV2"]
    resource = tron_devnet.post("wallet/getaccountresource", {"address": carol.address, "visible": True})
    assert resource["EnergyLimit"] == 10_000


def test_a_constant_call_answers_energy_and_result_without_a_change(tron_devnet: DevnetClient) -> None:
    alice, bob = tron_devnet.accounts["alice"], tron_devnet.accounts["bob"]
    body = {
        "owner_address": alice.address,
        "contract_address": tron_devnet.token,
        "function_selector": "transfer(address,uint256)",
        "parameter": Key.abi_address(bob.address) + (3 * USDT).to_bytes(32, "big").hex(),
        "visible": True,
    }

    estimate = tron_devnet.post("wallet/triggerconstantcontract", body)
    too_much = tron_devnet.post(
        "wallet/triggerconstantcontract",
        dict(body, parameter=Key.abi_address(bob.address) + (10**20).to_bytes(32, "big").hex()),
    )

    assert estimate["result"] == {"result": True}
    assert estimate["energy_used"] > 10_000 and int(estimate["constant_result"][0], 16) == 1
    assert estimate["transaction"]["raw_data"]["contract"][0]["type"] == "TriggerSmartContract"
    assert tron_devnet.token_balance(bob.address) == 10_000 * USDT
    assert too_much["result"] == {"result": True, "message": b"REVERT opcode executed".hex()}
    assert too_much["transaction"]["ret"] == [{"ret": "FAILED"}]  # the call's failure is its ret
    no_contract = tron_devnet.post("wallet/triggersmartcontract", dict(body, contract_address=bob.address))
    assert (
        bytes.fromhex(no_contract["result"]["message"]).decode()
        == "No contract or not a valid smart contract"
    )

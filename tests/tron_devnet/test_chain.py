"""Blocks and the devnet's controls over HTTP: ids and timestamps as java-tron makes them, the solidified
height behind walletsolidity/, forks that drop an unsolidified deposit, GET requests, both address forms."""

from __future__ import annotations

import itertools

from tests.tron_devnet.fixtures import DevnetClient
from tests.tron_devnet.keys import Key

TRX = 1_000_000


def test_blocks_chain_by_id_3_seconds_apart(tron_devnet: DevnetClient) -> None:
    tron_devnet.mine(3)

    blocks = [tron_devnet.post("wallet/getblockbynum", {"num": n}) for n in range(4)]

    for number, (parent, block) in enumerate(itertools.pairwise(blocks), start=1):
        header = block["block_header"]["raw_data"]
        assert block["blockID"][:16] == f"{number:016x}"  # 8 bytes of height, then the header's hash
        assert header["number"] == number and header["parentHash"] == parent["blockID"]
        assert header["timestamp"] == parent["block_header"]["raw_data"]["timestamp"] + 3_000
        assert "transactions" not in block
    assert tron_devnet.post("wallet/getnowblock") == blocks[-1]
    assert tron_devnet.post("wallet/getblockbyid", {"value": blocks[2]["blockID"]}) == blocks[2]
    assert tron_devnet.post("wallet/getblockbynum", {"num": 9}) == {}


def test_the_clock_skips_slots_on_request(tron_devnet: DevnetClient) -> None:
    first = tron_devnet.mine()

    later = tron_devnet.mine(skip_seconds=600)

    assert later["timestamp"] == first["timestamp"] + 603_000


def test_node_info_and_walletsolidity_follow_head_minus_19(tron_devnet: DevnetClient) -> None:
    tron_devnet.mine(25)

    info = tron_devnet.post("wallet/getnodeinfo")
    solid = tron_devnet.post("walletsolidity/getnowblock")

    head = tron_devnet.post("wallet/getnowblock")
    assert info["block"] == f"Num:25,ID:{head['blockID']}"
    assert info["solidityBlock"] == f"Num:6,ID:{solid['blockID']}"
    assert solid["block_header"]["raw_data"]["number"] == 6
    assert tron_devnet.post("walletsolidity/getblockbynum", {"num": 6}) == solid
    assert tron_devnet.post("walletsolidity/getblockbynum", {"num": 7}) == {}
    assert tron_devnet.post("walletsolidity/gettransactioninfobyblocknum", {"num": 7}) == []


def test_a_fork_drops_an_unsolidified_deposit(tron_devnet: DevnetClient) -> None:
    alice, deposit = tron_devnet.accounts["alice"], Key.from_seed("deposit")
    tron_devnet.mine(2)
    payment = alice.sign(tron_devnet.transfer(alice, deposit.address, 5 * TRX))
    token = alice.sign(tron_devnet.token_transfer(alice, deposit.address, 9_000_000))
    tron_devnet.send(payment)
    tron_devnet.send(token)
    mined = tron_devnet.mine()
    tron_devnet.mine(2)
    seen = tron_devnet.post("wallet/getblockbynum", {"num": mined["head"]})

    forked = tron_devnet.fork(3)
    tron_devnet.mine(3)

    assert sorted(forked["dropped"]) == sorted([payment["txID"], token["txID"]])
    assert tron_devnet.info_by_id(payment["txID"]) == {}
    assert tron_devnet.post("wallet/gettransactionbyid", {"value": payment["txID"]}) == {}
    assert tron_devnet.post("wallet/getaccount", {"address": deposit.address, "visible": True}) == {}
    assert tron_devnet.token_balance(deposit.address) == 0
    assert tron_devnet.balance(alice.address) == 100_000 * TRX
    replaced = tron_devnet.post("wallet/getblockbynum", {"num": mined["head"]})
    assert replaced["blockID"] != seen["blockID"] and "transactions" not in replaced
    history = tron_devnet.get(f"v1/accounts/{deposit.address}/transactions/trc20")
    assert history["data"] == []
    # Its reference block survived the fork, and it has not expired: the same transaction may come back.
    assert tron_devnet.send(payment)["result"] is True


def test_a_fork_never_reaches_a_solid_block(tron_devnet: DevnetClient) -> None:
    tron_devnet.mine(30)

    refused = tron_devnet.post("devnet/fork", {"depth": 20}, status=400)
    allowed = tron_devnet.fork(19)

    assert "unsolidified" in refused["Error"]
    assert allowed["head"] == 11


def test_a_transaction_on_a_forked_away_block_fails_tapos(tron_devnet: DevnetClient) -> None:
    alice, bob = tron_devnet.accounts["alice"], tron_devnet.accounts["bob"]
    tron_devnet.mine(2)
    stale = alice.sign(tron_devnet.transfer(alice, bob.address, TRX))  # references block 2

    tron_devnet.fork(1)
    tron_devnet.mine(1)

    assert tron_devnet.send(stale)["code"] == "TAPOS_ERROR"


def test_reads_answer_get_requests_and_both_address_forms(tron_devnet: DevnetClient) -> None:
    alice = tron_devnet.accounts["alice"]
    tron_devnet.mine()

    by_get = tron_devnet.get("wallet/getblockbynum", {"num": 1, "visible": "true"})
    hex_form = tron_devnet.post("wallet/getaccount", {"address": alice.hex_address})
    visible = tron_devnet.get("wallet/getaccount", {"address": alice.address, "visible": "true"})

    assert by_get["block_header"]["raw_data"]["witness_address"].startswith("T")
    assert hex_form["address"] == alice.hex_address and visible["address"] == alice.address
    assert hex_form["balance"] == visible["balance"] == 100_000 * TRX
    bad = tron_devnet.post("wallet/getaccount", {"address": "TNotAnAddress"})
    assert "Error" in bad


def test_chain_parameters_carry_the_fees(tron_devnet: DevnetClient) -> None:
    parameters = {
        p["key"]: p.get("value", 0) for p in tron_devnet.post("wallet/getchainparameters")["chainParameter"]
    }

    assert parameters["getEnergyFee"] == 420
    assert parameters["getTransactionFee"] == 1_000
    assert parameters["getCreateAccountFee"] == 100_000
    assert parameters["getCreateNewAccountFeeInSystemContract"] == 1_000_000
    assert parameters["getFreeNetLimit"] == 600


def test_gettransactionbyid_answers_the_signed_transaction_with_its_result(tron_devnet: DevnetClient) -> None:
    alice, bob = tron_devnet.accounts["alice"], tron_devnet.accounts["bob"]
    tx = alice.sign(tron_devnet.transfer(alice, bob.address, TRX))
    tron_devnet.send(tx)
    tron_devnet.mine()

    found = tron_devnet.post("wallet/gettransactionbyid", {"value": tx["txID"], "visible": True})

    assert found["txID"] == tx["txID"] and found["signature"] == tx["signature"]
    assert found["raw_data_hex"] == tx["raw_data_hex"] and found["raw_data"] == tx["raw_data"]
    assert found["ret"] == [{"contractRet": "SUCCESS"}]
    assert tron_devnet.post("wallet/gettransactionbyid", {"value": "ab" * 32}) == {}


def test_the_controls_refuse_what_they_cannot_do(tron_devnet: DevnetClient) -> None:
    stranger = Key.from_seed("stranger")

    stake = tron_devnet.post("devnet/stake", {"address": stranger.address, "sun": TRX}, status=400)
    mine = tron_devnet.post("devnet/mine", {"blocks": 0}, status=400)
    missing = tron_devnet.post("devnet/nothing", status=404)

    assert (
        "must exist" in stake["Error"]
        and "at least 1" in mine["Error"]
        and "no such endpoint" in missing["Error"]
    )

"""What the devnet refuses, with Agave's codes, messages and data: an expired blockhash (BlockhashNotFound),
a duplicate (AlreadyProcessed), a bad signature; a failed transaction that skipped the preflight is
recorded with its `err` and pays its fee; malformed requests get jsonrpc-core's errors."""

from __future__ import annotations

import base64

from solders.keypair import Keypair
from solders.signature import Signature
from solders.transaction import VersionedTransaction

from tests.solana_devnet import wallet
from tests.solana_devnet.agave import parsed_error
from tests.solana_devnet.fixtures import DevnetClient
from tests.solana_devnet.node import MAX_PROCESSING_AGE

SOL = wallet.LAMPORTS_PER_SOL


def test_a_blockhash_older_than_150_blocks_is_not_found(solana_devnet: DevnetClient) -> None:
    merchant = Keypair().pubkey()
    answer = solana_devnet.rpc("getLatestBlockhash", {"commitment": "confirmed"})
    last_valid = answer["value"]["lastValidBlockHeight"]
    old = wallet.payment(solana_devnet.customer, merchant, SOL, solana_devnet.blockhash())
    solana_devnet.mine(MAX_PROCESSING_AGE - 1)
    # The working bank's height is now lastValidBlockHeight: the blockhash is still good.
    assert solana_devnet.rpc("getBlockHeight", {"commitment": "processed"}) == last_valid
    in_time = wallet.payment(solana_devnet.customer, merchant, 2 * SOL, solana_devnet.blockhash("confirmed"))
    solana_devnet.mine()

    error = solana_devnet.send_error(old, preflightCommitment="processed")

    assert error["code"] == -32002
    assert error["message"] == "Transaction simulation failed: Blockhash not found"
    assert error["data"]["err"] == "BlockhashNotFound" and error["data"]["logs"] == []
    assert error["data"]["unitsConsumed"] == 0 and error["data"]["accounts"] is None
    parsed_error({"jsonrpc": "2.0", "error": error, "id": 1}, "SendTransactionResp")
    # Without the preflight the node takes it and it never lands.
    signature = solana_devnet.send(old, skipPreflight=True)
    solana_devnet.mine()
    assert signature == str(old.signatures[0]) and solana_devnet.status(signature) is None
    assert solana_devnet.balance(merchant) == 0
    assert solana_devnet.send(in_time) == str(in_time.signatures[0])  # this one's hash is younger


def test_a_duplicate_is_refused_as_already_processed(solana_devnet: DevnetClient) -> None:
    merchant = Keypair().pubkey()
    transaction = wallet.payment(solana_devnet.customer, merchant, SOL, solana_devnet.blockhash())
    signature = solana_devnet.send(transaction)

    error = solana_devnet.send_error(transaction, preflightCommitment="processed")
    solana_devnet.mine()
    again = solana_devnet.send_error(transaction)  # preflight at confirmed: it is in the head's slot

    for refused in (error, again):
        assert refused["code"] == -32002
        assert (
            refused["message"] == "Transaction simulation failed: This transaction has already been processed"
        )
        assert refused["data"]["err"] == "AlreadyProcessed"
    # Sent again without the preflight, it is taken and dropped: paid once.
    assert solana_devnet.send(transaction, skipPreflight=True) == signature
    solana_devnet.mine()
    assert solana_devnet.balance(merchant) == SOL
    assert len(solana_devnet.rpc("getSignaturesForAddress", str(merchant), {"commitment": "confirmed"})) == 1


def test_the_preflight_at_finalized_does_not_know_a_confirmed_blockhash(solana_devnet: DevnetClient) -> None:
    solana_devnet.mine(5)
    transaction = wallet.payment(
        solana_devnet.customer, Keypair().pubkey(), SOL, solana_devnet.blockhash("confirmed")
    )

    error = solana_devnet.send_error(transaction, preflightCommitment="finalized")

    assert (
        error["data"]["err"] == "BlockhashNotFound"
    )  # as on mainnet: fetch the blockhash at the same commitment
    assert solana_devnet.send(transaction, preflightCommitment="confirmed") == str(transaction.signatures[0])


def test_a_failed_transfer_is_recorded_with_its_err_and_pays_its_fee(solana_devnet: DevnetClient) -> None:
    payer, merchant = Keypair(), Keypair().pubkey()
    solana_devnet.airdrop(payer.pubkey(), SOL)
    solana_devnet.mine()
    transaction = wallet.payment(payer, merchant, 2 * SOL, solana_devnet.blockhash())

    refused = solana_devnet.send_error(transaction)  # the preflight simulates it and refuses
    signature = solana_devnet.send(transaction, skipPreflight=True)
    solana_devnet.mine()

    assert refused["code"] == -32002
    assert (
        refused["message"]
        == "Transaction simulation failed: Error processing Instruction 0: custom program error: 0x1"
    )
    assert refused["data"]["err"] == {"InstructionError": [0, {"Custom": 1}]}
    assert any("insufficient lamports" in line for line in refused["data"]["logs"])
    status = solana_devnet.status(signature)
    assert status["err"] == {"InstructionError": [0, {"Custom": 1}]}
    assert status["status"] == {"Err": {"InstructionError": [0, {"Custom": 1}]}}
    meta = solana_devnet.transaction(signature)["meta"]
    assert meta["err"] == status["err"] and meta["status"] == status["status"]
    assert meta["fee"] == 5_000
    assert meta["preBalances"][0] - meta["postBalances"][0] == 5_000  # the fee, nothing else
    assert meta["postBalances"][1] == meta["preBalances"][1] == 0
    assert solana_devnet.balance(payer.pubkey()) == SOL - 5_000
    (found,) = solana_devnet.rpc("getSignaturesForAddress", str(merchant), {"commitment": "confirmed"})
    assert found["err"] == {"InstructionError": [0, {"Custom": 1}]}


def test_a_fee_payer_that_does_not_exist_never_lands(solana_devnet: DevnetClient) -> None:
    nobody = Keypair()
    transaction = wallet.payment(nobody, Keypair().pubkey(), SOL, solana_devnet.blockhash())

    refused = solana_devnet.send_error(transaction)
    signature = solana_devnet.send(transaction, skipPreflight=True)
    solana_devnet.mine()

    assert refused["data"]["err"] == "AccountNotFound"
    assert refused["message"] == (
        "Transaction simulation failed: Attempt to debit an account but found no record of a prior credit."
    )
    assert solana_devnet.status(signature) is None


def test_a_bad_signature_fails_verification(solana_devnet: DevnetClient) -> None:
    good = wallet.payment(solana_devnet.customer, Keypair().pubkey(), SOL, solana_devnet.blockhash())
    forged = VersionedTransaction.populate(good.message, [Signature(bytes(64))])

    error = solana_devnet.send_error(forged)

    assert error == {"code": -32003, "message": "Transaction signature verification failure"}
    parsed_error({"jsonrpc": "2.0", "error": error, "id": 1}, "SendTransactionResp")
    signature = solana_devnet.send(forged, skipPreflight=True)
    solana_devnet.mine()
    assert solana_devnet.status(signature) is None


def test_malformed_requests_get_jsonrpc_errors(solana_devnet: DevnetClient) -> None:
    assert solana_devnet.post("", "not json at all") == {  # a JSON string, not a request
        "jsonrpc": "2.0",
        "error": {"code": -32600, "message": "Invalid request"},
        "id": None,
    }
    response = solana_devnet.http.post(solana_devnet.url, data=b"{nope", timeout=10)
    assert response.status_code == 200
    assert response.json()["error"] == {"code": -32700, "message": "Parse error"}
    assert solana_devnet.rpc_error("getAccountInfo", "x") == {"code": -32601, "message": "Method not found"}
    assert solana_devnet.rpc_error("getBalance", "not-an-address")["code"] == -32602
    assert solana_devnet.rpc_error("getBalance", "1111")["message"] == "Invalid param: WrongSize"
    limit = solana_devnet.rpc_error("getSignaturesForAddress", str(Keypair().pubkey()), {"limit": 1001})
    assert limit == {"code": -32602, "message": "Invalid limit; max 1000"}
    too_many = solana_devnet.rpc_error("getSignatureStatuses", [str(Signature.default())] * 257)
    assert too_many == {"code": -32602, "message": "Too many inputs provided; max 256"}
    garbage = solana_devnet.rpc_error(
        "sendTransaction", base64.b64encode(b"\x01\x02").decode(), {"encoding": "base64"}
    )
    assert garbage["code"] == -32602 and garbage["message"].startswith("failed to deserialize")
    batch = solana_devnet.post(
        "",
        [
            {"jsonrpc": "2.0", "id": 1, "method": "getSlot"},
            {"jsonrpc": "2.0", "id": "b", "method": "nope"},
        ],
    )
    assert [item["id"] for item in batch] == [1, "b"] and "result" in batch[0] and "error" in batch[1]


def test_a_v0_transaction_needs_max_supported_transaction_version(solana_devnet: DevnetClient) -> None:
    signature = solana_devnet.payment(Keypair().pubkey(), SOL, version=0)
    legacy = solana_devnet.payment(Keypair().pubkey(), SOL, version="legacy")
    solana_devnet.mine()

    error = solana_devnet.rpc_error("getTransaction", signature, {"commitment": "confirmed"})
    plain = solana_devnet.rpc("getTransaction", legacy, {"commitment": "confirmed"})

    assert error["code"] == -32015
    assert error["message"].startswith("Transaction version (0) is not supported by the requesting client.")
    assert "version" not in plain and plain["slot"] > 0  # no version without maxSupportedTransactionVersion
    parsed_error({"jsonrpc": "2.0", "error": error, "id": 1}, "GetTransactionResp")


def test_an_api_key_is_required_when_the_devnet_has_one() -> None:
    from tests.solana_devnet.server import start

    running = start(api_key="s3cret")
    try:
        client = DevnetClient(running.url, api_key="s3cret")
        assert isinstance(client.rpc("getSlot"), int)
        response = client.http.post(
            running.url,
            json={"jsonrpc": "2.0", "id": 1, "method": "getSlot"},
            headers={"x-api-key": "wrong"},
            timeout=10,
        )
        assert response.status_code == 401
    finally:
        running.stop()

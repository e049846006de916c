"""Payments over HTTP: a Solana Pay transfer with a reference is found by the reference and by the receiving
address, its amount is the exact balance delta of getTransaction's meta, both memo programs carry a memo,
legacy and v0 messages alike; the answers are read back with Agave's own types (solders)."""

from __future__ import annotations

import base64

import pytest
from bip_utils import Base58Decoder, Base58Encoder
from solders.keypair import Keypair
from solders.transaction import VersionedTransaction

from tests.solana_devnet import wallet
from tests.solana_devnet.agave import parsed
from tests.solana_devnet.fixtures import DevnetClient

SOL = wallet.LAMPORTS_PER_SOL


@pytest.mark.parametrize("version", [0, "legacy"])
def test_a_payment_with_a_reference_is_found_by_the_reference_and_the_address(
    solana_devnet: DevnetClient, version: int | str
) -> None:
    merchant, reference = Keypair().pubkey(), Keypair().pubkey()
    signature = solana_devnet.payment(merchant, 1_234_567_891, references=[reference], version=version)
    solana_devnet.mine()

    by_reference = solana_devnet.call("getSignaturesForAddress", str(reference), {"commitment": "confirmed"})
    by_address = solana_devnet.rpc("getSignaturesForAddress", str(merchant), {"commitment": "confirmed"})

    parsed(by_reference, "GetSignaturesForAddressResp")
    (found,) = by_reference["result"]
    assert found == {
        "signature": signature,
        "slot": solana_devnet.info["genesis_slot"] + 1,
        "err": None,
        "memo": None,
        "blockTime": found["blockTime"],
        "confirmationStatus": "confirmed",
    }
    assert isinstance(found["blockTime"], int)
    assert [item["signature"] for item in by_address] == [signature]


def test_the_balance_delta_in_meta_is_exact_in_lamports(solana_devnet: DevnetClient) -> None:
    merchant, reference = Keypair().pubkey(), Keypair().pubkey()
    customer = solana_devnet.customer.pubkey()
    before = solana_devnet.balance(customer)
    signature = solana_devnet.payment(merchant, 12_345_678_901, references=[reference])
    solana_devnet.mine()

    answer = solana_devnet.call(
        "getTransaction",
        signature,
        {"encoding": "json", "maxSupportedTransactionVersion": 0, "commitment": "confirmed"},
    )

    typed = parsed(answer, "GetTransactionResp")
    transaction = answer["result"]
    meta, message = transaction["meta"], transaction["transaction"]["message"]
    keys = message["accountKeys"]
    assert keys[0] == str(customer) and str(merchant) in keys and str(reference) in keys
    at = keys.index(str(merchant))
    assert meta["postBalances"][at] - meta["preBalances"][at] == 12_345_678_901
    assert meta["preBalances"][0] - meta["postBalances"][0] == 12_345_678_901 + 5_000
    assert all(type(n) is int for n in meta["preBalances"] + meta["postBalances"] + [meta["fee"]])
    assert (meta["err"], meta["status"], meta["fee"]) == (None, {"Ok": None}, 5_000)
    assert transaction["version"] == 0 and message["addressTableLookups"] == []
    assert transaction["transaction"]["signatures"] == [signature]
    assert meta["logMessages"][0] == "Program 11111111111111111111111111111111 invoke [1]"
    assert solana_devnet.balance(customer) == before - 12_345_678_901 - 5_000
    assert typed.value.transaction.meta.fee == 5_000  # solders read the same numbers


def test_the_reference_is_a_read_only_non_signer_key_of_the_transfer(solana_devnet: DevnetClient) -> None:
    merchant, first, second = (Keypair().pubkey() for _ in range(3))
    signature = solana_devnet.payment(merchant, SOL, references=[first, second], version="legacy")
    solana_devnet.mine()

    transaction = solana_devnet.transaction(signature)

    message = transaction["transaction"]["message"]
    keys = message["accountKeys"]
    (transfer,) = message["instructions"]
    assert keys[transfer["programIdIndex"]] == "11111111111111111111111111111111"
    assert [keys[i] for i in transfer["accounts"]] == [
        str(solana_devnet.customer.pubkey()),
        str(merchant),
        str(first),
        str(second),
    ]
    header = message["header"]
    # The references and the program are the read-only unsigned keys at the end of the keys.
    readonly = keys[len(keys) - header["numReadonlyUnsignedAccounts"] :]
    assert {str(first), str(second), "11111111111111111111111111111111"} == set(readonly)
    assert header["numRequiredSignatures"] == 1 and header["numReadonlySignedAccounts"] == 0
    assert transaction["version"] == "legacy" and "addressTableLookups" not in message
    assert transfer["stackHeight"] is None


@pytest.mark.parametrize("program", ["v1", "v3"])
def test_both_memo_programs_carry_the_memo(solana_devnet: DevnetClient, program: str) -> None:
    merchant, reference = Keypair().pubkey(), Keypair().pubkey()
    memo = "order 42 — café"
    signature = solana_devnet.payment(
        merchant, SOL, references=[reference], memo=memo, memo_program=wallet.MEMO_PROGRAMS[program]
    )
    solana_devnet.mine()

    (found,) = solana_devnet.rpc("getSignaturesForAddress", str(reference), {"commitment": "confirmed"})
    transaction = solana_devnet.transaction(signature)

    assert (
        found["memo"] == f"[{len(memo.encode())}] {memo}"
    )  # Agave: the data's length in bytes, then the text
    assert transaction["meta"]["err"] is None
    message = transaction["transaction"]["message"]
    memo_ix, transfer_ix = message["instructions"]
    assert message["accountKeys"][memo_ix["programIdIndex"]] == str(wallet.MEMO_PROGRAMS[program])
    assert message["accountKeys"][transfer_ix["programIdIndex"]] == "11111111111111111111111111111111"
    logs = transaction["meta"]["logMessages"]
    assert f"Program {wallet.MEMO_PROGRAMS[program]} success" in logs  # the program ran
    if program == "v3":
        assert f"Program log: {memo}" in logs


@pytest.mark.parametrize("program", ["v1", "v3"])
def test_a_memo_that_is_not_utf8_fails_the_transaction(solana_devnet: DevnetClient, program: str) -> None:
    merchant = Keypair().pubkey()
    transaction = wallet.payment(
        solana_devnet.customer,
        merchant,
        SOL,
        solana_devnet.blockhash(),
        memo=b"\xff\xfe",
        memo_program=wallet.MEMO_PROGRAMS[program],
    )

    signature = solana_devnet.send(transaction, skipPreflight=True)
    solana_devnet.mine()

    meta = solana_devnet.transaction(signature)["meta"]
    # The memo instruction (index 0) fails: v1 says InvalidInstructionData, v3 (as LiteSVM ships it)
    # ProgramFailedToComplete; either way the transfer after it never happens.
    index, _ = meta["err"]["InstructionError"]
    assert index == 0 and meta["fee"] == 5_000
    assert solana_devnet.balance(merchant) == 0


def test_the_pay_control_pays_as_a_wallet(solana_devnet: DevnetClient) -> None:
    merchant, reference = Keypair().pubkey(), Keypair().pubkey()

    sent = solana_devnet.pay(merchant, 2 * SOL, references=[reference], memo="inv-7", memo_program="v1")
    solana_devnet.mine()

    assert sent["landed"] is True and sent["err"] is None
    (found,) = solana_devnet.rpc("getSignaturesForAddress", str(reference), {"commitment": "confirmed"})
    assert found["signature"] == sent["signature"] and found["memo"] == "[5] inv-7"
    assert solana_devnet.balance(merchant) == 2 * SOL


def test_an_airdrop_funds_a_new_address_and_too_little_for_rent_fails(solana_devnet: DevnetClient) -> None:
    rich, poor = Keypair().pubkey(), Keypair().pubkey()

    funded = solana_devnet.airdrop(rich, 3 * SOL)
    starved = solana_devnet.airdrop(poor, 1_000)  # under the rent-exempt minimum of an empty account
    solana_devnet.mine()

    assert funded["err"] is None and solana_devnet.balance(rich, "confirmed") == 3 * SOL
    assert starved["landed"] is True
    assert starved["err"] == {"InsufficientFundsForRent": {"account_index": 1}}
    assert solana_devnet.balance(poor, "confirmed") == 0
    assert solana_devnet.transaction(starved["signature"])["meta"]["fee"] == 5_000


def test_base64_and_base58_encodings_of_a_transaction(solana_devnet: DevnetClient) -> None:
    merchant = Keypair().pubkey()
    transaction = wallet.payment(solana_devnet.customer, merchant, SOL, solana_devnet.blockhash())
    raw = bytes(transaction)

    signature = solana_devnet.rpc("sendTransaction", Base58Encoder.Encode(raw))  # base58: the default
    solana_devnet.mine()

    for encoding in ("base64", "base58"):
        config = {"encoding": encoding, "maxSupportedTransactionVersion": 0, "commitment": "confirmed"}
        blob, named = solana_devnet.rpc("getTransaction", signature, config)["transaction"]
        assert named == encoding
        decoded = base64.b64decode(blob) if encoding == "base64" else Base58Decoder.Decode(blob)
        assert VersionedTransaction.from_bytes(decoded) == transaction
    assert signature == str(transaction.signatures[0])

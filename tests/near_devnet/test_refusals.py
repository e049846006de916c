"""send_tx: what the stub refuses (nearcore's InvalidTxError in `data`) and what it runs once."""

from __future__ import annotations

from typing import Any

import pytest

from tests.near_devnet import wallet
from tests.near_devnet.fixtures import MakeNearDevnet, NearDevnet

NEAR = 10**24
PAYER = "payer.devnet"


@pytest.fixture
def payer(near_devnet: NearDevnet) -> Any:
    private, public = wallet.keypair("payer")
    near_devnet.account(PAYER, 10 * NEAR, public_key=public.hex())
    near_devnet.account("shop.devnet", NEAR)
    return private


def _refusal(devnet: NearDevnet, encoded: str) -> dict[str, Any]:
    error = devnet.error("send_tx", {"signed_tx_base64": encoded, "wait_until": "NONE"})
    assert error["name"] == "HANDLER_ERROR" and error["cause"]["name"] == "INVALID_TRANSACTION", error
    return error["data"]["TxExecutionError"]["InvalidTxError"]  # type: ignore[no-any-return]


def _head(devnet: NearDevnet) -> str:
    return devnet.block()["header"]["hash"]  # type: ignore[no-any-return]


def test_bad_signature_is_refused(near_devnet: NearDevnet, payer: Any) -> None:
    encoded, _ = wallet.sign(
        payer, PAYER, 1, "shop.devnet", _head(near_devnet), [wallet.transfer(1)], corrupt=True
    )

    assert "InvalidSignature" in _refusal(near_devnet, encoded)


def test_unknown_key_is_refused(near_devnet: NearDevnet, payer: Any) -> None:
    stranger, _ = wallet.keypair("stranger")
    encoded, _ = wallet.sign(stranger, PAYER, 1, "shop.devnet", _head(near_devnet), [wallet.transfer(1)])

    assert "AccessKeyNotFound" in _refusal(near_devnet, encoded)["InvalidAccessKeyError"]


def test_nonce_reuse_and_too_large_nonce_are_refused(near_devnet: NearDevnet, payer: Any) -> None:
    head = _head(near_devnet)
    first, _ = wallet.sign(payer, PAYER, 5, "shop.devnet", head, [wallet.transfer(1)])
    near_devnet.rpc("send_tx", {"signed_tx_base64": first, "wait_until": "NONE"})
    near_devnet.produce(1)
    head = _head(near_devnet)
    height = near_devnet.block()["header"]["height"]

    reused, _ = wallet.sign(payer, PAYER, 5, "shop.devnet", head, [wallet.transfer(2)])
    too_large, _ = wallet.sign(payer, PAYER, height * 1_000_000, "shop.devnet", head, [wallet.transfer(2)])

    assert _refusal(near_devnet, reused) == {"InvalidNonce": {"ak_nonce": 5, "tx_nonce": 5}}
    assert _refusal(near_devnet, too_large) == {
        "NonceTooLarge": {"tx_nonce": height * 1_000_000, "upper_bound": height * 1_000_000}
    }


def test_expired_block_hash_is_refused(make_near_devnet: MakeNearDevnet) -> None:
    devnet = make_near_devnet(validity=2)
    private, public = wallet.keypair("payer")
    devnet.account(PAYER, NEAR, public_key=public.hex())
    old = _head(devnet)
    devnet.produce(3)

    encoded, _ = wallet.sign(private, PAYER, 1, PAYER, old, [wallet.transfer(1)])

    assert _refusal(devnet, encoded) == {"Expired": None}


def test_not_enough_balance_and_storage_are_refused(near_devnet: NearDevnet, payer: Any) -> None:
    head = _head(near_devnet)

    everything, _ = wallet.sign(payer, PAYER, 1, "shop.devnet", head, [wallet.transfer(10 * NEAR)])
    below_storage, _ = wallet.sign(
        payer, PAYER, 1, "shop.devnet", head, [wallet.transfer(10 * NEAR - 10**21)]
    )

    assert _refusal(near_devnet, everything)["NotEnoughBalance"]["signer_id"] == PAYER
    assert _refusal(near_devnet, below_storage)["LackBalanceForState"]["signer_id"] == PAYER


def test_unsupported_action_is_refused_by_name(near_devnet: NearDevnet, payer: Any) -> None:
    _, other = wallet.keypair("other")
    encoded, _ = wallet.sign(payer, PAYER, 1, PAYER, _head(near_devnet), [wallet.add_key_action(other)])

    refusal = _refusal(near_devnet, encoded)

    assert refusal["ActionsValidation"]["UnsupportedByDevnet"]["action"] == "AddKey"


def test_same_transaction_twice_runs_once(near_devnet: NearDevnet, payer: Any) -> None:
    encoded, tx_hash = wallet.sign(
        payer, PAYER, 1, "shop.devnet", _head(near_devnet), [wallet.transfer(NEAR)]
    )

    near_devnet.rpc("send_tx", {"signed_tx_base64": encoded, "wait_until": "NONE"})
    near_devnet.finalize()
    again = near_devnet.rpc("send_tx", {"signed_tx_base64": encoded, "wait_until": "FINAL"})

    assert again["final_execution_status"] == "FINAL" and again["transaction"]["hash"] == tx_hash
    near_devnet.finalize()
    assert near_devnet.balance("shop.devnet") == 2 * NEAR


def test_send_tx_waiting_for_execution_times_out_at_once(near_devnet: NearDevnet, payer: Any) -> None:
    encoded, _ = wallet.sign(payer, PAYER, 1, "shop.devnet", _head(near_devnet), [wallet.transfer(NEAR)])

    answer = near_devnet.call("send_tx", {"signed_tx_base64": encoded, "wait_until": "EXECUTED_OPTIMISTIC"})

    assert answer["error"]["cause"]["name"] == "TIMEOUT_ERROR"
    near_devnet.produce(2)
    assert (
        near_devnet.rpc("send_tx", {"signed_tx_base64": encoded})["final_execution_status"]
        == "EXECUTED_OPTIMISTIC"
    )


def test_decoder_reads_a_transaction_signed_by_nearcore() -> None:
    # the signed transaction of nearcore issue #6357 (a real client's bytes): decoded and its signature
    # verified over the hash computed here
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from tests.near_devnet.borsh import decode_signed_transaction

    encoded = (
        "QAAAADgyYzcwZDBhNDhlYjJjODE3ODE3ZGQ0Zjg3ZTVjNjczNmViYjgyNWJjMDIzZTQ5YWE3MzA5YTZlN2MxMmMyNDcAgscNCkjrLIF4F91P"
        "h+XGc267glvAI+SapzCabnwSwkcBAAAAAAAAAEAAAABmZGFjM2UxNDRlZDlmYzEwMDRlZDMxODI3MTM2ZDFlNzJjYzMzOTgwMTdmYjcx"
        "Y2I3YjI4NjFjOGRmODU0ZGNj9E8CGtdXfWt27jQA1eyAa4PG7/m1m06wX1122aqYcgUBAAAAAwAAIKqTzGzjr6+DBgAAAAAAhxQYc3ns"
        "MPH+gtnfMyJhpcPym20XDypNgaGK67vV86iRVfg6c0wnnlmVhWwXmKMbmTvDP5uR+DGei0BW+p6cCQ=="
    )
    import base64

    tx = decode_signed_transaction(base64.b64decode(encoded))

    assert tx.signer_id == "82c70d0a48eb2c817817dd4f87e5c6736ebb825bc023e49aa7309a6e7c12c247"
    assert tx.nonce == 1 and tx.actions[0].deposit == 2_016_109 * 10**21
    Ed25519PublicKey.from_public_bytes(tx.public_key).verify(tx.signature, tx.hash)

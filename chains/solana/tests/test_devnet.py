"""The Solana client against the devnet (tests/solana_devnet: Agave's JSON-RPC over LiteSVM): a Solana Pay
payment found by its reference and read to the lamport, finality followed to finalized, and each refusal
of sendTransaction typed as the client promises."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import to_bytes_versioned
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.transaction import VersionedTransaction

from chains.answers import limited_session
from chains.solana import errors
from chains.solana.node import SolanaNode
from chains.solana.transfers import memo_texts, received
from tests.solana_devnet import wallet
from tests.solana_devnet.fixtures import DevnetClient
from tests.solana_devnet.node import FINALITY_DEPTH, MAX_PROCESSING_AGE
from tests.solana_devnet.server import start

SOL = wallet.LAMPORTS_PER_SOL


@pytest.fixture
def node(solana_devnet: DevnetClient) -> Iterator[SolanaNode]:
    session = limited_session()
    yield SolanaNode(solana_devnet.url, session=session)
    session.close()


def _payment(
    devnet: DevnetClient,
    node: SolanaNode,
    to: str,
    lamports: int,
    *,
    payer: Keypair | None = None,
    **options: Any,
) -> bytes:
    """A wallet's signed payment, its blockhash asked of the node by the client."""
    blockhash = Hash.from_string(node.latest_blockhash("confirmed").blockhash)
    transaction = wallet.payment(
        payer or devnet.customer, Pubkey.from_string(to), lamports, blockhash, **options
    )
    return bytes(transaction)


def test_a_payment_is_found_by_its_reference_and_read_to_the_lamport(
    solana_devnet: DevnetClient, node: SolanaNode
) -> None:
    merchant, reference = str(Keypair().pubkey()), str(Keypair().pubkey())
    raw = _payment(
        solana_devnet,
        node,
        merchant,
        1_234_567_891,
        references=[Pubkey.from_string(reference)],
        memo="kassa:inv_1; paid",
    )
    txid = node.send_transaction(raw)
    solana_devnet.mine()

    (found,) = node.signatures_for_address(reference, commitment="confirmed")
    transaction = node.transaction(found.signature, commitment="confirmed")

    assert found.signature == txid and found.err is None and found.confirmation_status == "confirmed"
    assert memo_texts(found.memo) == ("kassa:inv_1; paid",)
    assert transaction is not None
    paid = received(transaction, merchant)
    assert paid is not None
    assert paid.lamports == 1_234_567_891
    assert paid.references == (reference,)
    assert paid.senders == (str(solana_devnet.customer.pubkey()),)
    assert paid.memos == ("kassa:inv_1; paid",)
    assert node.balance(merchant, "confirmed") == 1_234_567_891
    assert node.balance(merchant) == 0  # not finalized yet


def test_finality_is_followed_to_finalized(solana_devnet: DevnetClient, node: SolanaNode) -> None:
    txid = node.send_transaction(_payment(solana_devnet, node, str(Keypair().pubkey()), SOL))

    (processed,) = node.signature_statuses([txid])
    solana_devnet.mine()
    (confirmed,) = node.signature_statuses([txid])
    solana_devnet.mine(FINALITY_DEPTH)
    (finalized,) = node.signature_statuses([txid])

    assert processed is not None and processed.confirmation_status == "processed"
    assert confirmed is not None and confirmed.confirmation_status == "confirmed" and not confirmed.finalized
    assert finalized is not None and finalized.finalized and finalized.confirmations is None
    assert node.transaction(txid) is not None  # finalized by default
    assert node.slot("confirmed") - node.slot() == FINALITY_DEPTH


def test_an_expired_blockhash_is_blockhash_not_found(solana_devnet: DevnetClient, node: SolanaNode) -> None:
    raw = _payment(solana_devnet, node, str(Keypair().pubkey()), SOL)
    last_valid = node.latest_blockhash("confirmed").last_valid_block_height
    solana_devnet.mine(MAX_PROCESSING_AGE + 1)

    with pytest.raises(errors.BlockhashNotFound) as raised:
        node.send_transaction(raw)

    assert node.block_height("confirmed") > last_valid
    assert raised.value.err == "BlockhashNotFound" and raised.value.code == -32002


def test_a_duplicate_is_already_processed(solana_devnet: DevnetClient, node: SolanaNode) -> None:
    raw = _payment(solana_devnet, node, str(Keypair().pubkey()), SOL)
    node.send_transaction(raw)
    solana_devnet.mine()

    with pytest.raises(errors.AlreadyProcessed):
        node.send_transaction(raw)


def test_a_failed_transfer_is_a_preflight_failure_then_a_failed_transaction(
    solana_devnet: DevnetClient, node: SolanaNode
) -> None:
    payer, merchant = Keypair(), str(Keypair().pubkey())
    solana_devnet.airdrop(payer.pubkey(), SOL)
    solana_devnet.mine()
    raw = _payment(solana_devnet, node, merchant, 2 * SOL, payer=payer)

    with pytest.raises(errors.PreflightFailure) as raised:
        node.send_transaction(raw)
    txid = node.send_transaction(raw, skip_preflight=True)
    solana_devnet.mine()

    assert type(raised.value) is errors.PreflightFailure
    assert raised.value.err == {"InstructionError": [0, {"Custom": 1}]}
    assert any("insufficient lamports" in line for line in raised.value.logs)
    transaction = node.transaction(txid, commitment="confirmed")
    assert transaction is not None and transaction.meta is not None
    assert transaction.meta.err == {"InstructionError": [0, {"Custom": 1}]} and transaction.meta.fee == 5_000
    assert received(transaction, merchant) is None


def test_a_forged_signature_fails_verification(solana_devnet: DevnetClient, node: SolanaNode) -> None:
    good = VersionedTransaction.from_bytes(_payment(solana_devnet, node, str(Keypair().pubkey()), SOL))
    forged = VersionedTransaction.populate(good.message, [Signature(bytes(64))])

    with pytest.raises(errors.SignatureVerificationFailure):
        node.send_transaction(bytes(forged))


def test_fees_as_the_devnet_charges_them(solana_devnet: DevnetClient, node: SolanaNode) -> None:
    raw = _payment(
        solana_devnet, node, str(Keypair().pubkey()), SOL, compute_unit_limit=1_000, compute_unit_price=50_000
    )
    message = to_bytes_versioned(VersionedTransaction.from_bytes(raw).message)

    fee = node.fee_for_message(message, commitment="confirmed")
    txid = node.send_transaction(raw)
    slot = solana_devnet.mine()["slot"]

    transaction = node.transaction(txid, commitment="confirmed")
    assert transaction is not None and transaction.meta is not None
    assert fee == transaction.meta.fee == 5_000 + 50
    fees = {f.slot: f.fee for f in node.recent_prioritization_fees([str(solana_devnet.customer.pubkey())])}
    assert fees[slot] == 50_000


def test_paging_with_before(solana_devnet: DevnetClient, node: SolanaNode) -> None:
    merchant = str(Keypair().pubkey())
    sent = [node.send_transaction(_payment(solana_devnet, node, merchant, SOL + n)) for n in range(5)]
    solana_devnet.mine()

    first = node.signatures_for_address(merchant, limit=2, commitment="confirmed")
    rest = node.signatures_for_address(merchant, before=first[-1].signature, commitment="confirmed")

    assert [i.signature for i in first + rest] == sent[::-1]


def test_the_api_key_header_reaches_the_node() -> None:
    running = start(api_key="s3cret")
    try:
        assert isinstance(SolanaNode(running.url, api_key="s3cret").slot(), int)
        with pytest.raises(errors.SolanaNodeUnavailable, match="HTTP 401"):
            SolanaNode(running.url, api_key="wrong").slot()
        with pytest.raises(errors.SolanaNodeUnavailable, match="HTTP 401"):
            SolanaNode(running.url).slot()
    finally:
        running.stop()


def test_an_unreachable_node_is_unavailable() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    # Nothing listens on the port now.
    with pytest.raises(errors.SolanaNodeUnavailable, match="ConnectionError"):
        SolanaNode(f"http://127.0.0.1:{port}").slot()

"""The Solana signer reads the message it is asked to sign and signs only a processing withdrawal's payout
from its own hot key: exactly its address and amount, the compute-budget instructions within the caps,
nothing else; a second transaction of a withdrawal only once the first can never land. Its signatures
verify under the seed's SLIP-10 key m/44'/501'/0'/0'."""

from __future__ import annotations

import base64
import json
import threading
from dataclasses import dataclass, field
from decimal import Decimal

import pytest
from solders.compute_budget import set_compute_unit_limit, set_compute_unit_price
from solders.hash import Hash
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.message import Message, MessageV0, to_bytes_versioned
from solders.pubkey import Pubkey
from solders.system_program import (
    AdvanceNonceAccountParams,
    AssignParams,
    TransferParams,
    advance_nonce_account,
    assign,
    transfer,
)
from solders.transaction import VersionedTransaction

from chains.base import PayoutRefused, UnsignedTx
from chains.derivation import DEVELOPMENT_MNEMONIC
from chains.evm.signer import serve
from chains.signers import SeedMismatch, SeedSigner
from chains.solana import keys
from chains.solana.payouts import stored_transaction
from chains.solana.policy import SignRefused, SolanaRules, payout_message, signing_request
from chains.solana.signer import MAX_PROCESSING_AGE, SolanaJournal, SolanaSigner, SolanaSocketSigner
from tests.chain import fund
from tests.factories import CompanyFactory
from withdrawals.rules import WithdrawalItem
from withdrawals.services import withdrawal_reject, withdrawal_request

HOT = Pubkey.from_string(keys.development_address())
PAYEE = Keypair.from_seed(bytes([7] * 32)).pubkey()
ATTACKER = Keypair.from_seed(bytes([6] * 32)).pubkey()
BLOCKHASH = Hash(bytes([9] * 32))
LAMPORTS = 1_500_000_000  # the withdrawal's 1.5 SOL
CAP = 1_000_000  # lamports of priority fee


@dataclass
class Chain:
    """The node as the journal asks it: block heights and the signatures it knows."""

    height: int = 1_000
    landed: set[str] = field(default_factory=set)

    def block_height(self, code: str, commitment: str) -> int:
        return self.height

    def known(self, code: str, txid: str) -> bool:
        return txid in self.landed


def rules(**changes) -> SolanaRules:
    return SolanaRules(**{"code": "sol", "priority_fee_cap": CAP, **changes})


def signer(journal: SolanaJournal | None = None, chain: Chain | None = None, **changes) -> SolanaSigner:
    return SolanaSigner(
        DEVELOPMENT_MNEMONIC, journal, rules=lambda code: rules(**changes), chain=chain or Chain()
    )


def request(message: Message | MessageV0 | bytes, ref: str, *, last_valid: int = 1_150) -> UnsignedTx:
    if isinstance(message, Message):
        payload = signing_request(message, ref=ref, last_valid_block_height=last_valid)
    else:
        raw = message if isinstance(message, bytes) else bytes(message)
        payload = json.dumps(
            {
                "purpose": "payout",
                "message": base64.b64encode(raw).decode(),
                "ref": ref,
                "last_valid_block_height": last_valid,
            }
        )
    return UnsignedTx(code="sol", payload=payload, payments=(), fee=Decimal(0))


def honest(
    lamports: int = LAMPORTS,
    to: Pubkey = PAYEE,
    *,
    price: int = 1_000,
    limit: int = 1_000,
    blockhash=BLOCKHASH,
) -> Message:
    return payout_message(HOT, to, lamports, blockhash, unit_limit=limit, unit_price=price)


def message(*instructions: Instruction, payer: Pubkey = HOT) -> Message:
    return Message.new_with_blockhash(list(instructions), payer, BLOCKHASH)


def budget() -> list[Instruction]:
    return [set_compute_unit_limit(1_000), set_compute_unit_price(1_000)]


def pay(to: Pubkey = PAYEE, lamports: int = LAMPORTS, source: Pubkey = HOT) -> Instruction:
    return transfer(TransferParams(from_pubkey=source, to_pubkey=to, lamports=lamports))


def withdraw(company, amount: str = "1.5") -> object:
    [withdrawal] = withdrawal_request(
        company=company, items=[WithdrawalItem(asset="sol", amount=Decimal(amount), to=str(PAYEE), tag="")]
    )
    return withdrawal


@pytest.fixture
def withdrawal(db):
    company = CompanyFactory()
    fund(company, "sol", "100")
    return withdraw(company)


# --- the payout it signs ------------------------------------------------------------------------------


def test_the_stored_payout_is_signed_by_the_hot_key_and_verifies(withdrawal):
    signed = signer().sign(request(honest(), withdrawal.reference))

    wire, last_valid = stored_transaction(signed.raw)
    transaction = VersionedTransaction.from_bytes(wire)
    assert signed.sender == str(HOT) and signed.nonce is None and last_valid == 1_150
    assert signed.txid == str(transaction.signatures[0])
    assert transaction.verify_with_results() == [True]
    assert bytes(transaction.message) == bytes(honest())
    assert signed.fee == Decimal("0.000005001")  # 5,000 lamports a signature, 1,000 units at 1,000 µL


@pytest.mark.parametrize(
    ("forged", "refusal"),
    [
        (lambda: honest(to=ATTACKER), "not the payout of withdrawal"),
        (lambda: honest(LAMPORTS + 1), "not the payout of withdrawal"),
        (lambda: honest(LAMPORTS - 1), "not the payout of withdrawal"),
        (lambda: message(*budget(), pay(source=ATTACKER), payer=ATTACKER), "hot address pays the fee"),
        (lambda: message(*budget(), pay(), pay(ATTACKER)), "exactly three instructions"),
        (lambda: message(*budget(), pay(), payer=ATTACKER), "hot address pays the fee"),
        (
            lambda: message(
                *budget(),
                advance_nonce_account(
                    AdvanceNonceAccountParams(nonce_pubkey=ATTACKER, authorized_pubkey=HOT)
                ),
                pay(),
            ),
            "exactly three instructions",
        ),
        (
            lambda: message(
                advance_nonce_account(
                    AdvanceNonceAccountParams(nonce_pubkey=ATTACKER, authorized_pubkey=HOT)
                ),
                set_compute_unit_price(1_000),
                pay(),
            ),
            "first instruction sets the compute-unit limit",
        ),
        (lambda: message(*budget(), assign(AssignParams(pubkey=HOT, owner=ATTACKER))), "System transfer"),
        (lambda: message(pay(), *budget()), "first instruction sets the compute-unit limit"),
        (lambda: message(set_compute_unit_limit(1_000), pay(), pay()), "second instruction sets"),
        (
            lambda: message(
                *budget(),
                Instruction(
                    pay().program_id, pay().data, [*pay().accounts, AccountMeta(ATTACKER, True, True)]
                ),
            ),
            "only signer",
        ),
        (
            lambda: message(
                *budget(),
                Instruction(
                    pay().program_id, pay().data, [*pay().accounts, AccountMeta(ATTACKER, False, True)]
                ),
            ),
            "System transfer, and nothing else",
        ),
        (
            lambda: message(
                *budget(),
                Instruction(
                    pay().program_id,
                    pay().data,
                    [AccountMeta(HOT, True, True), AccountMeta(PAYEE, False, False)],
                ),
            ),
            "not exactly the payout",
        ),
        (
            lambda: message(
                *budget(),
                Instruction(Pubkey.from_string("TokenkegQfeZyiNwAJbNbGMRzn2n4Gj3T5oVPDFs7hJ"), b"\x03", []),
            ),
            "System transfer",
        ),
        (lambda: honest(limit=10_001, price=1), "compute-unit limit of 10001"),
        (lambda: honest(price=1_000_000_001), "over the priority_fee_cap 0.001 SOL"),
    ],
    ids=[
        "another recipient",
        "one lamport more",
        "one lamport less",
        "another fee payer and sender",
        "a second transfer",
        "another fee payer",
        "a durable nonce advance",
        "a nonce advance first",
        "an assign instead of the transfer",
        "the transfer first",
        "no compute-unit price",
        "another signer",
        "an extra account",
        "a read-only recipient",
        "a token program instruction",
        "an unbounded unit limit",
        "a priority fee over the cap",
    ],
)
def test_a_forged_payout_is_refused(withdrawal, forged, refusal):
    with pytest.raises(SignRefused, match=refusal):
        signer().sign(request(forged(), withdrawal.reference))


def test_a_versioned_message_is_refused(withdrawal):
    v0 = to_bytes_versioned(MessageV0.try_compile(HOT, [*budget(), pay()], [], BLOCKHASH))

    with pytest.raises(SignRefused, match="only legacy messages"):
        signer().sign(request(v0, withdrawal.reference))


@pytest.mark.parametrize(
    ("payload", "refusal"),
    [
        ("not json", "a JSON object"),
        ("[]", "a JSON object"),
        (json.dumps({"purpose": "sweep", "message": "AA=="}), "only payouts are signed"),
        (json.dumps({"purpose": "payout", "message": None}), "in base64"),
        (json.dumps({"purpose": "payout", "message": "!!"}), "not base64"),
        (json.dumps({"purpose": "payout", "message": base64.b64encode(bytes(32)).decode()}), "never a hash"),
        (json.dumps({"purpose": "payout", "message": base64.b64encode(bytes(64)).decode()}), "never a hash"),
        (
            json.dumps({"purpose": "payout", "message": base64.b64encode(b"\x01" * 90).decode()}),
            "cannot be read",
        ),
    ],
    ids=[
        "garbage",
        "not an object",
        "another purpose",
        "no message",
        "not base64",
        "a bare hash",
        "a signature",
        "garbage bytes",
    ],
)
def test_a_request_that_is_no_readable_message_is_refused(withdrawal, payload, refusal):
    with pytest.raises(SignRefused, match=refusal):
        signer().sign(UnsignedTx(code="sol", payload=payload, payments=(), fee=Decimal(0)))


def test_an_instruction_naming_an_account_the_message_lacks_is_refused(withdrawal):
    raw = bytearray(bytes(honest()))
    raw[-14] = 9  # the transfer's recipient (its 2nd account index, before 13 bytes of data): past the 4 keys

    with pytest.raises(SignRefused, match="names an account the message does not have"):
        signer().sign(request(bytes(raw), withdrawal.reference))


def test_bytes_after_an_honest_message_are_refused(withdrawal):
    with pytest.raises(SignRefused, match="cannot be read fully"):
        signer().sign(request(bytes(honest()) + b"\x00", withdrawal.reference))


def test_a_payout_of_no_processing_withdrawal_is_refused(withdrawal):
    with pytest.raises(SignRefused, match="no withdrawal 'withdrawal:nope'"):
        signer().sign(request(honest(), "withdrawal:nope"))
    withdrawal_reject(uid=withdrawal.uid, reason="test")
    with pytest.raises(SignRefused, match="not processing"):
        signer().sign(request(honest(), withdrawal.reference))


def test_a_payout_over_the_payout_limit_is_refused(withdrawal):
    with pytest.raises(SignRefused, match=r"1\.5 sol is over the payout limit 1"):
        signer(payout_limit=Decimal(1)).sign(request(honest(), withdrawal.reference))


def test_payouts_beyond_the_daily_limit_are_refused(withdrawal):
    limited = signer(daily_limit=Decimal(2))
    limited.sign(request(honest(), withdrawal.reference))
    second = withdraw(withdrawal.company)

    with pytest.raises(SignRefused, match=r"3 sol today is over the daily limit 2"):
        limited.sign(request(honest(price=1_001), second.reference))


def test_the_same_transaction_is_never_signed_as_the_payout_of_two_withdrawals(withdrawal):
    journal = SolanaJournal()
    signer(journal).sign(request(honest(), withdrawal.reference))
    twin = withdraw(withdrawal.company)  # the same address and amount: on the same blockhash, the same bytes

    with pytest.raises(SignRefused, match=f"signed as the payout of {withdrawal.reference} already"):
        signer(journal).sign(request(honest(), twin.reference))


def test_a_code_without_rules_is_refused(withdrawal, settings):
    settings.CHAIN_NODES = {}

    with pytest.raises(SignRefused, match="no Solana signing rules for sol"):
        SolanaSigner(DEVELOPMENT_MNEMONIC, chain=Chain()).sign(request(honest(), withdrawal.reference))


# --- one transaction a withdrawal -----------------------------------------------------------------------


def test_a_withdrawal_is_signed_again_only_once_its_first_transaction_can_never_land(withdrawal, tmp_path):
    path = str(tmp_path / "journal.sqlite3")
    chain = Chain(height=1_000)
    first = request(honest(), withdrawal.reference, last_valid=1_150)
    rebuilt = request(honest(blockhash=Hash(bytes([8] * 32))), withdrawal.reference, last_valid=1_400)

    signed = signer(SolanaJournal(path), chain).sign(first)

    assert signer(SolanaJournal(path), chain).sign(first) == signed  # the same message: the same signature
    chain.height = 1_150  # the node's finalized height reached its last valid height: it may still land
    with pytest.raises(SignRefused, match="may land until block height 1150"):
        signer(SolanaJournal(path), chain).sign(rebuilt)  # a restarted signer: the journal is its file
    chain.height, chain.landed = 1_151, {signed.txid}
    with pytest.raises(SignRefused, match="which the node knows"):
        signer(SolanaJournal(path), chain).sign(rebuilt)
    chain.landed = set()
    assert signer(SolanaJournal(path), chain).sign(rebuilt).txid != signed.txid  # expired, never landed


def test_a_last_valid_height_understated_by_the_request_does_not_shorten_the_wait(withdrawal):
    chain = Chain(height=1_000)
    journal = SolanaJournal()
    signer(journal, chain).sign(request(honest(), withdrawal.reference, last_valid=1))
    chain.height = 1_000 + MAX_PROCESSING_AGE  # past the forged height, not past what the node allows
    rebuilt = request(honest(blockhash=Hash(bytes([8] * 32))), withdrawal.reference)

    with pytest.raises(SignRefused, match=f"may land until block height {1_000 + MAX_PROCESSING_AGE}"):
        signer(journal, chain).sign(rebuilt)


def test_a_node_that_cannot_answer_refuses_the_second_transaction(withdrawal):
    class Down(Chain):
        def block_height(self, code: str, commitment: str) -> int:
            raise OSError("down")

    journal = SolanaJournal()
    signer(journal).sign(request(honest(), withdrawal.reference))

    with pytest.raises(SignRefused, match="cannot say now whether it may still land"):
        signer(journal, Down()).sign(request(honest(blockhash=Hash(bytes([8] * 32))), withdrawal.reference))


# --- one seed, every family -----------------------------------------------------------------------------


def test_the_seed_signer_serves_sol_with_the_development_key_and_names_its_hot_address(withdrawal):
    seed = SeedSigner(DEVELOPMENT_MNEMONIC)
    seed.signers["sol"] = signer()

    assert seed.hot_addresses()["sol"] == str(HOT)
    assert seed.sign(request(honest(), withdrawal.reference)).sender == str(HOT)


def test_a_configured_wallet_that_is_not_the_seeds_stops_the_signer_process(settings):
    settings.CHAIN_XPUBS = {"sol": str(PAYEE)}

    assert not SolanaSigner(DEVELOPMENT_MNEMONIC, chain=Chain()).matches_configuration()
    with pytest.raises(SeedMismatch, match=r"not the one behind CHAIN_XPUBS\['sol'\]"):
        SeedSigner(DEVELOPMENT_MNEMONIC)
    settings.CHAIN_XPUBS = {"sol": str(HOT)}
    assert SolanaSigner(DEVELOPMENT_MNEMONIC, chain=Chain()).matches_configuration()
    assert "sol" in SeedSigner(DEVELOPMENT_MNEMONIC).signers


def test_the_sandboxs_extended_sol_key_leaves_sol_unserved_and_the_signer_process_starts(settings):
    sandbox_key = (
        "xpub661MyMwAqRbcFtXgS5sYJABqqG9YLmC4Q1Rdap9gSE8NqtwybGhePY2gZ29ESFjqJoCu1Rupje8YtGqsefD265TMg7us"
        "UDFdp6W1EGMcet8"
    )
    settings.CHAIN_XPUBS = {"sol": sandbox_key}

    assert "sol" not in SeedSigner(DEVELOPMENT_MNEMONIC).signers


@pytest.mark.django_db(transaction=True)  # the socket's thread reads the withdrawal from the database
def test_the_signer_process_signs_sol_over_its_socket_as_in_process(withdrawal, tmp_path):
    seed = SeedSigner(DEVELOPMENT_MNEMONIC)
    seed.signers["sol"] = signer()
    path, started, servers = str(tmp_path / "signer.sock"), threading.Event(), []

    def ready(server):
        servers.append(server)
        started.set()

    thread = threading.Thread(target=serve, args=(seed, path), kwargs={"ready": ready})
    thread.start()
    try:
        assert started.wait(10)
        remote = SolanaSocketSigner(path)
        signed = remote.sign(request(honest(), withdrawal.reference))
        with pytest.raises(PayoutRefused, match="not the payout of withdrawal"):
            remote.sign(request(honest(to=ATTACKER), withdrawal.reference))
    finally:
        servers[0].shutdown()
        thread.join(10)

    assert signed == signer().sign(request(honest(), withdrawal.reference))

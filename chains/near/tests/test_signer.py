"""The NEAR signer signs what chains.near.policy approves with the seed's own keys (the hot key for a payout,
pool key i for the sweep of deposit account i), keeps payouts within the daily limit and to one transaction
a withdrawal while the first may still land, exports the public keys of its pool (never a private one),
and serves both over the signer process's socket beside the other families."""

from __future__ import annotations

import hashlib
import threading
from decimal import Decimal

import pytest
from bip_utils import Bip39MnemonicGenerator
from django.test import override_settings

from chains.base import PayoutRefused, UnsignedTx
from chains.derivation import DEVELOPMENT_MNEMONIC
from chains.evm.signer import serve
from chains.models import Sweep
from chains.near import keys, transaction
from chains.near import signer as near_signer
from chains.near.policy import NearRules, SignRefused, signing_request
from chains.near.signer import NearJournal, NearSigner, NearSocketSigner, get_signer, never_lands
from chains.near.transaction import DeleteAccount, Transaction, Transfer
from chains.near.units import to_yocto
from chains.seed_keys import chain_xpubs
from chains.signers import SeedMismatch, SeedSigner
from tests.factories import WithdrawalFactory

SEED = keys.seed_of(DEVELOPMENT_MNEMONIC)
HOT_KEY = keys.hot_key(SEED)[1]
HOT = transaction.implicit_account(HOT_KEY)
BLOCK = bytes(range(32))
PAYEE = "payee.near"
NODE = {"url": "http://127.0.0.1:3030", "network": "private"}


def signer(journal: NearJournal | None = None, *, gone: bool = False, calls: list | None = None, **limits):
    rules = NearRules(code="near", account=HOT, **limits)

    def never_lands(*args: str) -> bool:
        if calls is not None:
            calls.append(args)
        return gone

    return NearSigner(DEVELOPMENT_MNEMONIC, journal, rules=lambda code: rules, gone=never_lands)


def payout(withdrawal, *, nonce: int = 7, block: bytes = BLOCK) -> UnsignedTx:
    tx = Transaction(HOT, HOT_KEY, nonce, PAYEE, block, (Transfer(to_yocto(withdrawal.amount)),))
    payload = signing_request("payout", tx, ref=withdrawal.reference)
    return UnsignedTx(code="near", payload=payload, payments=(), fee=Decimal("0.0001"))


def sweep(index: int) -> UnsignedTx:
    key = keys.pool_key(SEED, index)[1]
    account = transaction.implicit_account(key)
    tx = Transaction(account, key, 11, account, BLOCK, (DeleteAccount(HOT),))
    return UnsignedTx(
        code="near", payload=signing_request("sweep", tx, index=index), payments=(), fee=Decimal(0)
    )


def _withdraw(amount: str = "12.5"):
    return WithdrawalFactory(asset="near", to=PAYEE, amount=Decimal(amount))


# --- what is signed -----------------------------------------------------------------------------------------


def test_the_stored_payout_is_signed_by_the_hot_key_and_its_txid_is_its_hash(db):
    withdrawal = _withdraw()

    signed = signer().sign(payout(withdrawal))

    tx, signature = transaction.decode_signed(bytes.fromhex(signed.raw))
    assert (tx.signer_id, tx.public_key, tx.receiver_id, tx.actions) == (
        HOT,
        HOT_KEY,
        PAYEE,
        (Transfer(12_500_000 * 10**18),),
    )
    assert transaction.verify(tx, signature)
    assert signed.txid == transaction.b58encode(hashlib.sha256(tx.encode()).digest())
    assert (signed.sender, signed.nonce, signed.fee) == (HOT, 7, Decimal("0.0001"))
    assert signer().sign(payout(withdrawal)) == signed  # ed25519 is deterministic: the same transaction


def test_a_sweep_is_signed_by_the_pool_key_of_its_index(db):
    key = keys.pool_key(SEED, 5)[1]
    Sweep.objects.create(
        code="near", address=key.hex(), derivation_index=5, amount=Decimal(1), status=Sweep.Status.READY
    )

    signed = signer().sign(sweep(5))

    tx, signature = transaction.decode_signed(bytes.fromhex(signed.raw))
    assert tx.public_key == key and transaction.verify(tx, signature)
    assert tx.actions == (DeleteAccount(HOT),)
    assert (signed.sender, signed.nonce, signed.txid) == (key.hex(), 11, tx.txid())


def test_a_payout_over_the_daily_limit_is_refused_and_each_withdrawal_counts_once(db):
    first, second = _withdraw("12"), _withdraw("12")
    journal = NearJournal()

    signer(journal, daily_limit=Decimal(20)).sign(payout(first))
    signer(journal, daily_limit=Decimal(20)).sign(payout(first))  # the same transaction again: no more moves
    with pytest.raises(SignRefused, match=r"24 near today is over the daily limit 20 of near"):
        signer(journal, daily_limit=Decimal(20)).sign(payout(second, nonce=8))
    signer(journal, daily_limit=Decimal(24)).sign(payout(second, nonce=8))


def test_a_withdrawal_is_signed_as_one_transaction_until_that_one_can_never_land(db, tmp_path):
    withdrawal = _withdraw()
    journal = str(tmp_path / "journal.sqlite3")
    calls: list[tuple[str, ...]] = []
    first = signer(NearJournal(journal)).sign(payout(withdrawal))
    rebuilt = payout(withdrawal, nonce=8, block=bytes(32))

    with pytest.raises(SignRefused, match=f"signed already as {first.txid}, which may still land"):
        signer(NearJournal(journal), calls=calls).sign(rebuilt)  # a restarted signer: the journal is its file
    again = signer(NearJournal(journal), gone=True, calls=calls).sign(rebuilt)

    assert calls == [("near", first.txid, first.raw, HOT)] * 2  # asked of the first, as it was stored
    assert again.txid != first.txid and again.nonce == 8
    assert signer(NearJournal(journal)).sign(payout(withdrawal)) == first  # its own txid: always again


def test_one_transaction_is_never_signed_for_two_withdrawals(db):
    first, second = _withdraw(), _withdraw()
    journal = NearJournal()
    signed = signer(journal).sign(payout(first))
    forged = UnsignedTx(
        code="near",
        payload=payout(first).payload.replace(first.reference, second.reference),
        payments=(),
        fee=Decimal(0),
    )

    with pytest.raises(SignRefused, match=f"this very transaction was signed for {first.reference}"):
        signer(journal).sign(forged)
    assert signed.txid


def test_the_node_not_answering_means_the_first_transaction_may_still_land(db):
    assert never_lands("near", "txid", "00", HOT) is False  # no near backend to ask here: refused on doubt


# --- the deposit key pool -----------------------------------------------------------------------------------


def test_the_pool_public_keys_are_the_seeds_keys_in_hex(db):
    found = signer().public_keys("near", 7, 4)

    assert found == [key.hex() for _index, key in keys.pool_public_keys(SEED, 7, 4)]
    assert found[0] == keys.pool_key(SEED, 7)[1].hex() and HOT_KEY.hex() not in found


@pytest.mark.parametrize(
    ("code", "start", "count", "reason"),
    [
        ("near", -1, 1, "start is an int from 0"),
        ("near", 0, 1001, "count is an int from 0 to 1000"),
        ("near", 2**31 - 1, 2, "count must be an int from 0 to 1"),
        ("near", True, 1, "start is an int"),
        ("ton", 0, 1, "ton is not a NEAR code"),
        ("nope", 0, 1, "'nope' is not a payment code"),
    ],
)
def test_public_keys_outside_the_pool_are_refused(db, code, start, count, reason):
    with pytest.raises(SignRefused, match=reason):
        signer().public_keys(code, start, count)


# --- one seed, every family ---------------------------------------------------------------------------------


def test_the_hot_key_is_the_configured_one_and_another_seed_is_refused(db):
    other = str(Bip39MnemonicGenerator().FromWordsNumber(12))
    other_key = chain_xpubs(other)["near"]
    assert (
        chain_xpubs(DEVELOPMENT_MNEMONIC)["near"] == HOT_KEY.hex() == keys.development_hot_public_key().hex()
    )
    assert "near" in SeedSigner(DEVELOPMENT_MNEMONIC).signers
    assert SeedSigner(DEVELOPMENT_MNEMONIC).hot_addresses()["near"] == HOT

    with override_settings(
        CHAIN_XPUBS={"near": other_key}, CHAIN_BACKENDS={"near": "near"}, CHAIN_NODES={"near": NODE}
    ):
        with pytest.raises(SeedMismatch, match=r"not the one behind CHAIN_XPUBS\['near'\]"):
            SeedSigner(DEVELOPMENT_MNEMONIC)
        assert NearSigner(other).matches_configuration()
        assert NearSigner(other).hot_address() == other_key  # its implicit account
    with override_settings(
        CHAIN_XPUBS={"near": f"ed25519:{transaction.b58encode(bytes.fromhex(other_key))}"}
    ):
        assert "near" in SeedSigner(other).signers


def test_the_sandboxs_extended_key_is_served_by_no_seed(db):
    with override_settings(CHAIN_XPUBS={"near": "xpub661MyMwAqRbcF"}):
        assert not NearSigner(DEVELOPMENT_MNEMONIC).matches_configuration()
        assert "near" not in SeedSigner(DEVELOPMENT_MNEMONIC).signers


def test_the_development_signer_signs_in_process_else_the_socket(settings):
    get_signer.cache_clear()
    try:
        assert isinstance(get_signer(), NearSigner)
        get_signer.cache_clear()
        settings.EVM_SIGNER = "unix:/run/kassa/signer.sock"
        remote = get_signer()
        assert isinstance(remote, NearSocketSigner) and remote.path == "/run/kassa/signer.sock"
        assert remote.refused is SignRefused
    finally:
        get_signer.cache_clear()


def test_the_signer_process_signs_and_exports_keys_over_its_socket_as_in_process(transactional_db, tmp_path):
    withdrawal = _withdraw()  # committed: the socket's thread reads it on its own connection
    seed = SeedSigner(DEVELOPMENT_MNEMONIC)
    seed.signers["near"] = signer()
    forged = UnsignedTx(
        code="near",
        payload=signing_request("payout", _to_attacker(withdrawal), ref=withdrawal.reference),
        payments=(),
        fee=Decimal(0),
    )
    path, started, servers = str(tmp_path / "signer.sock"), threading.Event(), []

    def ready(server):
        servers.append(server)
        started.set()

    thread = threading.Thread(target=serve, args=(seed, path), kwargs={"ready": ready})
    thread.start()
    try:
        assert started.wait(10)
        remote = NearSocketSigner(path)
        assert remote.sign(payout(withdrawal)) == signer().sign(payout(withdrawal))
        with pytest.raises(SignRefused, match=r"pays attacker\.near, not withdrawal") as refused:
            remote.sign(forged)
        exported = remote.public_keys("near", 0, near_signer.MAX_KEYS)  # the most one answer holds
        assert exported == [key.hex() for _index, key in keys.pool_public_keys(SEED, 0, near_signer.MAX_KEYS)]
        with pytest.raises(SignRefused, match="this signer exports no ton public keys"):
            remote.public_keys("ton", 0, 1)
        with pytest.raises(SignRefused, match="count is an int from 0 to 1000"):
            remote.public_keys("near", 0, 1001)
        with pytest.raises(SignRefused, match="with code, start and count"):
            remote.public_keys("near", "0", 1)  # type: ignore[arg-type]
    finally:
        if servers:
            servers[0].shutdown()
        thread.join(10)
    assert refused.value.refused_by == "The NEAR signer"


def _to_attacker(withdrawal) -> Transaction:
    return Transaction(HOT, HOT_KEY, 7, "attacker.near", BLOCK, (Transfer(to_yocto(withdrawal.amount)),))


def test_a_seed_signer_refuses_public_keys_of_a_family_without_a_pool(db):
    seed = SeedSigner(DEVELOPMENT_MNEMONIC)

    assert seed.public_keys("near", 2, 2) == [key.hex() for _index, key in keys.pool_public_keys(SEED, 2, 2)]
    with pytest.raises(PayoutRefused, match="this signer exports no evm public keys"):
        seed.public_keys("eth", 0, 1)
    with pytest.raises(PayoutRefused, match="'nope' is not a payment code"):
        seed.public_keys("nope", 0, 1)

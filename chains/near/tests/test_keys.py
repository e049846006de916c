"""The seed's NEAR keys against SLIP-0010's ed25519 vectors and near-seed-phrase's published key."""

from __future__ import annotations

import pytest
from bip_utils import Bip32Slip10Ed25519

from chains.derivation import DEVELOPMENT_MNEMONIC
from chains.near import keys
from chains.near.tests import vectors
from chains.near.transaction import b58decode, ed25519_public_key, implicit_account, public_key_text


@pytest.mark.parametrize(("path", "private", "public"), vectors.SLIP10_ED25519)
def test_slip10_ed25519_test_vector_1(path: str, private: str, public: str) -> None:
    node = Bip32Slip10Ed25519.FromSeedAndPath(bytes.fromhex(vectors.SLIP10_SEED), path)

    private_key, public_key = keys.key_pair(node)

    assert private_key.hex() == private
    assert public_key.hex() == public.removeprefix("00")
    # The SLIP-10 private key is an RFC 8032 seed: the signer's own derivation gives the same public key.
    assert ed25519_public_key(private_key) == public_key


def test_hot_key_is_near_seed_phrase_key() -> None:
    private_key, public_key = keys.hot_key(keys.seed_of(vectors.SEED_PHRASE))

    assert public_key_text(public_key) == vectors.SEED_PHRASE_PUBLIC_KEY
    assert b58decode(vectors.SEED_PHRASE_SECRET_KEY.removeprefix("ed25519:")) == private_key + public_key


def test_development_hot_key_is_the_test_mnemonics_first_near_account() -> None:
    public_key = keys.development_hot_public_key()

    assert implicit_account(public_key) == vectors.ABANDON_IMPLICIT
    assert public_key == keys.hot_key(keys.seed_of(DEVELOPMENT_MNEMONIC))[1]


def test_pool_key_is_the_documented_path() -> None:
    seed = keys.seed_of(DEVELOPMENT_MNEMONIC)

    for index in (0, 1, 2**31 - 1):
        node = Bip32Slip10Ed25519.FromSeedAndPath(seed, f"m/44'/397'/{keys.POOL_ACCOUNT}'/{index}'")
        assert keys.pool_key(seed, index) == keys.key_pair(node)


def test_pool_public_keys_list_the_pool_keys() -> None:
    seed = keys.seed_of(DEVELOPMENT_MNEMONIC)

    listed = keys.pool_public_keys(seed, 5, 3)

    assert listed == [(index, keys.pool_key(seed, index)[1]) for index in (5, 6, 7)]
    assert keys.pool_public_keys(seed, 2**31 - 1, 1) == [(2**31 - 1, keys.pool_key(seed, 2**31 - 1)[1])]
    assert keys.pool_public_keys(seed, 0, 0) == []


def test_pool_and_hot_keys_are_distinct() -> None:
    seed = keys.seed_of(DEVELOPMENT_MNEMONIC)

    publics = [public for _, public in keys.pool_public_keys(seed, 0, 20)] + [keys.hot_key(seed)[1]]

    assert len(set(publics)) == len(publics)


@pytest.mark.parametrize("index", [-1, 2**31, True, 1.0, "0"])
def test_pool_index_outside_hardened_range_is_refused(index: object) -> None:
    seed = keys.seed_of(DEVELOPMENT_MNEMONIC)

    with pytest.raises(ValueError, match="index"):
        keys.pool_key(seed, index)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="start"):
        keys.pool_public_keys(seed, index, 1)  # type: ignore[arg-type]


@pytest.mark.parametrize(("start", "count"), [(0, -1), (2**31 - 1, 2), (0, True)])
def test_pool_range_past_the_last_hardened_index_is_refused(start: int, count: int) -> None:
    with pytest.raises(ValueError, match="count"):
        keys.pool_public_keys(keys.seed_of(DEVELOPMENT_MNEMONIC), start, count)


@pytest.mark.parametrize(
    "mnemonic",
    ["abandon abandon zebra", "abandon " * 11 + "abandon", "", 42],
)
def test_invalid_mnemonic_is_refused_without_echoing_it(mnemonic: object) -> None:
    with pytest.raises(ValueError, match="mnemonic") as refused:
        keys.seed_of(mnemonic)  # type: ignore[arg-type]

    assert "abandon" not in str(refused.value)
    assert "zebra" not in str(refused.value)

"""The seed's NEAR keys: SLIP-10 ed25519, hardened all the way, as NEAR wallets derive them.

- The hot account's key is at HOT_PATH, m/44'/397'/0', the default path of near-seed-phrase, NEAR's
  library for wallet mnemonics: a wallet built on it shows the hot account when given the mnemonic, which
  is how an operator recovers it without Kassa.
- The deposit pool is account POOL_ACCOUNT's children: key i at m/44'/397'/1'/i'. Its implicit accounts
  are distinct from the hot one and from each other, and no wallet scans there by accident.

SLIP-10 ed25519 has no public derivation, so whoever lists the pool's addresses holds the seed. A private
key here is the 32-byte RFC 8032 seed, what `transaction.sign` takes.
"""

from __future__ import annotations

import functools

from bip_utils import Bip32KeyIndex, Bip32Slip10Ed25519, Bip39SeedGenerator, MnemonicChecksumError

from chains.derivation import DEVELOPMENT_MNEMONIC

HOT_PATH = "m/44'/397'/0'"
POOL_ACCOUNT = 1
POOL_PATH = f"m/44'/397'/{POOL_ACCOUNT}'"
POOL_SIZE = 2**31  # hardened indexes 0' .. 2**31-1'

KeyPair = tuple[bytes, bytes]  # (32-byte private seed, 32-byte public key)


def seed_of(mnemonic: str) -> bytes:
    """The BIP-39 seed of `mnemonic` with no passphrase (NEAR wallets use none).

    bip-utils rejoins the words it parsed, so case and spacing do not matter, as in near-seed-phrase's
    normalizeSeedPhrase.
    """
    if not isinstance(mnemonic, str):
        raise ValueError("a mnemonic is a string of BIP-39 words")
    try:
        return bytes(Bip39SeedGenerator(mnemonic).Generate())
    except (ValueError, MnemonicChecksumError):
        # Never echoed: the words are the money.
        raise ValueError("not a valid BIP-39 mnemonic (words, count or checksum)") from None


def hot_key(seed: bytes) -> KeyPair:
    return key_pair(Bip32Slip10Ed25519.FromSeedAndPath(seed, HOT_PATH))


def pool_key(seed: bytes, index: int) -> KeyPair:
    """Deposit key number `index`: m/44'/397'/1'/index'."""
    _require_index(index, "index")
    return _pool_child(_pool_account(seed), index)


def pool_public_keys(seed: bytes, start: int, count: int) -> list[tuple[int, bytes]]:
    """(index, public key) for pool keys start .. start+count-1, deriving the account node once."""
    _require_index(start, "start")
    if isinstance(count, bool) or not isinstance(count, int) or count < 0 or start + count > POOL_SIZE:
        raise ValueError(f"count must be an int from 0 to {POOL_SIZE - start}, not {count!r}")
    account = _pool_account(seed)
    return [(index, _pool_child(account, index)[1]) for index in range(start, start + count)]


@functools.cache
def development_hot_public_key() -> bytes:
    """The hot key of the public test mnemonic: the sandbox's account, which ANYONE CAN SPEND."""
    return hot_key(seed_of(DEVELOPMENT_MNEMONIC))[1]


def key_pair(node: Bip32Slip10Ed25519) -> KeyPair:
    """(private seed, public key) of a SLIP-10 ed25519 node."""
    public = node.PublicKey().RawCompressed().ToBytes()
    # bip-utils writes ed25519 public keys as SLIP-10 prints them: 0x00 then the 32 key bytes.
    if len(public) != 33 or public[0] != 0:
        raise ValueError("bip-utils returned an ed25519 public key in an unexpected form")
    return bytes(node.PrivateKey().Raw().ToBytes()), bytes(public[1:])


def _pool_account(seed: bytes) -> Bip32Slip10Ed25519:
    return Bip32Slip10Ed25519.FromSeedAndPath(seed, POOL_PATH)


def _pool_child(account: Bip32Slip10Ed25519, index: int) -> KeyPair:
    return key_pair(account.ChildKey(Bip32KeyIndex.HardenIndex(index)))


def _require_index(index: object, what: str) -> None:
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < POOL_SIZE:
        raise ValueError(f"{what} must be an int from 0 to 2**31 - 1, not {index!r}")

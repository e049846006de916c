"""The public keys of a signer seed, as `CHAIN_XPUBS` takes them: what the web and the workers are
configured with while the seed itself stays with the signer process (docs/evm.md, the signer).

`manage.py signer_seed` prints them after sealing the seed. Before Kassa is configured (production refuses
to start without its keys, and so refuses every management command), the same comes without Django:

    .venv/bin/python -m chains.seed_keys < mnemonic.txt     # or type the words, then Ctrl-D

One entry per family the signer process signs for: the EVM and TRON account xpubs (BIP-44 m/44'/60'/0',
m/44'/195'/0'), TON's ed25519 public key in hex (SLIP-10 m/44'/607'/0'), Solana's address (SLIP-10
m/44'/501'/0'/0') and NEAR's hot key, its ed25519 public key in hex (SLIP-10 m/44'/397'/0'; the NEAR deposit
keys are not derived from it: the signer process exports their public keys). Public keys only: safe to
print, to configure and to store.
"""

from __future__ import annotations

import json
import sys

from bip_utils import Bip32Secp256k1, Bip32Slip10Ed25519, Bip39MnemonicValidator, Bip39SeedGenerator
from solders.pubkey import Pubkey

# Each family's account path; the family's signer derives its keys from the same one (the tests compare).
PATHS = {
    "evm": "m/44'/60'/0'",
    "tron": "m/44'/195'/0'",
    "ton": "m/44'/607'/0'",
    "sol": "m/44'/501'/0'/0'",
    "near": "m/44'/397'/0'",
}


def chain_xpubs(mnemonic: str) -> dict[str, str]:
    """The `CHAIN_XPUBS` entries of the seed of `mnemonic` (ValueError when it is no BIP-39 mnemonic)."""
    words = " ".join(mnemonic.split())
    if not Bip39MnemonicValidator().IsValid(words):
        raise ValueError("not a BIP-39 mnemonic (12 to 24 words of the English list, with a valid checksum)")
    seed = Bip39SeedGenerator(words).Generate()

    def xpub(path: str) -> str:
        return str(Bip32Secp256k1.FromSeedAndPath(seed, path).PublicKey().ToExtended())

    def ed25519(path: str) -> bytes:
        return bytes(Bip32Slip10Ed25519.FromSeedAndPath(seed, path).PublicKey().RawCompressed().ToBytes()[1:])

    return {
        "evm": xpub(PATHS["evm"]),
        "tron": xpub(PATHS["tron"]),
        "ton": ed25519(PATHS["ton"]).hex(),
        "sol": str(Pubkey(ed25519(PATHS["sol"]))),
        "near": ed25519(PATHS["near"]).hex(),
    }


def line(mnemonic: str) -> str:
    """The shell line that configures them."""
    return f"CHAIN_XPUBS='{json.dumps(chain_xpubs(mnemonic))}'"


def main() -> None:
    try:
        print(line(sys.stdin.read()))
    except ValueError as exc:
        sys.exit(f"chains.seed_keys: {exc}")


if __name__ == "__main__":
    main()

"""chains.seed_keys: the public keys of a signer seed, without Django (before Kassa is configured)."""

from __future__ import annotations

import os
import subprocess
import sys

from bip_utils import Bip39MnemonicGenerator

from chains.derivation import DEVELOPMENT_MNEMONIC, development_xpub
from chains.near.keys import HOT_PATH, development_hot_public_key
from chains.seed_keys import PATHS, chain_xpubs, line
from chains.solana.keys import development_address
from chains.ton.keys import development_public_key
from tests.workers import ROOT


def test_the_development_seed_gives_the_development_keys_of_every_family() -> None:
    keys = chain_xpubs(DEVELOPMENT_MNEMONIC)

    assert keys["ton"] == development_public_key().hex()
    assert keys["sol"] == development_address()
    assert keys["evm"] == development_xpub("evm")
    assert keys["tron"] == development_xpub("tron")
    assert keys["near"] == development_hot_public_key().hex()
    assert PATHS["near"] == HOT_PATH


def test_it_runs_without_django_from_a_mnemonic_on_stdin_and_refuses_anything_else() -> None:
    mnemonic = str(Bip39MnemonicGenerator().FromWordsNumber(12))
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}

    def run(text: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "chains.seed_keys"],
            input=text, capture_output=True, text=True, cwd=ROOT, env=env, check=False, timeout=60,
        )  # fmt: skip

    printed = run(f"  {mnemonic}\n")
    refused = run("these are not the words of any seed at all")

    assert (printed.returncode, printed.stdout.strip()) == (0, line(mnemonic))
    assert refused.returncode != 0 and "not a BIP-39 mnemonic" in refused.stderr
    assert "these are not" not in refused.stderr  # the words are never echoed

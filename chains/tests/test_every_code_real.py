"""Every one of the twelve payment codes has a real backend: production with the sandbox off offers all of
them at once, each on its own backend and node, deposits on the operator's keys (never the development
ones) and payouts through the signer process, and the deployment checks refuse nothing."""

from __future__ import annotations

from bip_utils import Bip39SeedGenerator, Bip44, Bip44Coins, Bip84, Bip84Coins

from chains.backend import get_backend
from chains.checks import check_chain_backends
from chains.seed_keys import chain_xpubs
from core.assets import all_assets
from core.offer import offered_codes

MNEMONIC = "legal winner thank year wave sausage worth useful legal winner thank yellow"
BACKENDS = {
    "btc": "bitcoincore",
    "ltc": "bitcoincore",
    "bch": "bitcoincore",
    "eth": "evm",
    "usdterc20": "evm",
    "usdc": "evm",
    "bnb": "evm",
    "trx": "tron",
    "trc20usdt": "tron",
    "ton": "ton",
    "sol": "solana",
    "near": "near",
}
EVM = "http://127.0.0.1:8545"
TRON = "http://127.0.0.1:8090"
NODES = {
    "btc": {"url": "http://kassa:secret@127.0.0.1:8332"},
    "ltc": {"url": "http://kassa:secret@127.0.0.1:9332"},
    "bch": {"url": "http://kassa:secret@127.0.0.1:8432"},
    "eth": {"url": EVM, "chain_id": 1},
    "usdterc20": {
        "url": EVM,
        "chain_id": 1,
        "contract": "0xdAC17F958D2ee523a2206206994597C13D831ec7",
        "decimals": 6,
    },
    "usdc": {
        "url": EVM,
        "chain_id": 1,
        "contract": "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
        "decimals": 6,
    },
    "bnb": {"url": "http://127.0.0.1:8546", "chain_id": 56},
    "trx": {"url": TRON},
    "trc20usdt": {"url": TRON, "contract": "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", "decimals": 6},
    "ton": {"url": "https://toncenter.com/api/v2"},
    "sol": {"url": "https://api.mainnet-beta.solana.com"},
    "near": {"url": "https://rpc.mainnet.near.org"},
}


def _operator_keys() -> dict[str, str]:
    """CHAIN_XPUBS of one operator's seed: what `python -m chains.seed_keys` prints, and the Bitcoin
    family's account keys (their wallets' own, BIP-84 and BIP-44)."""
    seed = Bip39SeedGenerator(MNEMONIC).Generate()
    keys = chain_xpubs(MNEMONIC)
    for family, coin in (("btc", Bip84Coins.BITCOIN), ("ltc", Bip84Coins.LITECOIN)):
        keys[family] = Bip84.FromSeed(seed, coin).Purpose().Coin().Account(0).PublicKey().ToExtended()
    bch = Bip44.FromSeed(seed, Bip44Coins.BITCOIN_CASH).Purpose().Coin().Account(0)
    keys["bch"] = bch.PublicKey().ToExtended()
    return keys


def test_production_offers_all_twelve_codes_on_real_backends(settings):
    settings.CHAIN_BACKENDS = BACKENDS
    settings.CHAIN_NODES = NODES
    settings.CHAIN_XPUBS = _operator_keys()
    settings.SANDBOX_ENABLED = False
    settings.EVM_SIGNER = "unix:/run/kassa/signer.sock"

    assert check_chain_backends() == []
    assert sorted(offered_codes()) == sorted(asset.code for asset in all_assets()) == sorted(BACKENDS)
    assert {code: get_backend(code).name for code in BACKENDS} == BACKENDS

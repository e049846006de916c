"""The solana backend's keys, configuration and deployment checks (no node needed): the receiving address
is a wallet's base58 public key or the refused development one; with a configured key and node, production
takes sol on the solana backend (its payouts work: chains.solana.tests.test_payouts)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from bip_utils import Bip39SeedGenerator
from django.core.exceptions import ImproperlyConfigured
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from chains.backend import get_backend
from chains.checks import check_chain_backends
from chains.derivation import DEVELOPMENT_MNEMONIC
from chains.solana import keys
from tests.factories import CompanyFactory

URL = "http://127.0.0.1:8899"
WALLET = str(Keypair.from_seed(bytes(range(32))).pubkey())


@pytest.fixture
def solana(settings):
    settings.CHAIN_BACKENDS = {"sol": "solana"}
    settings.CHAIN_NODES = {"sol": {"url": URL}}
    settings.CHAIN_XPUBS = {"sol": WALLET}
    settings.SANDBOX_ENABLED = False
    return get_backend("sol")


def test_the_development_key_is_the_first_account_of_the_public_mnemonic():
    # Phantom's and Solflare's first account of the BIP-39 test mnemonic (SLIP-10 m/44'/501'/0'/0'), as
    # solders (Solana's own derivation) computes it.
    seed = Bip39SeedGenerator(DEVELOPMENT_MNEMONIC).Generate()
    wallet = Keypair.from_seed_and_derivation_path(seed, "m/44'/501'/0'/0'").pubkey()

    assert keys.development_address() == str(wallet) == "HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk"


def test_the_receiving_address_is_the_configured_wallet_or_else_the_development_key(solana, settings):
    assert solana.hot_address("sol") == WALLET and not keys.uses_development_key()

    settings.CHAIN_XPUBS = {}

    assert solana.hot_address("sol") == keys.development_address() and keys.uses_development_key()


@pytest.mark.parametrize(
    ("configured", "said"),
    [
        (WALLET[:-2], "is not a Solana address"),
        (
            "xpub6CUGRUonZSQ4TWtTMmzXdrXDtypWKiKrhko4egpiMZbpiaQL2jkwSB1icqYh2cfDfVxdx4df189oLKnC5fSwqPfgyP3hooxujYzAu3fDVmz",
            "an extended key",
        ),
        (str(Pubkey.find_program_address([b"x"], Pubkey.default())[0]), "off the ed25519 curve"),
        (42, "must be a string"),
    ],
)
def test_a_receiving_key_that_is_not_a_wallet_address_is_refused_naming_the_key(
    solana, settings, configured, said
):
    settings.CHAIN_XPUBS = {"sol": configured}

    with pytest.raises(ImproperlyConfigured, match=said) as refused:
        solana.check_config("sol")

    assert 'CHAIN_XPUBS["sol"]' in str(refused.value)


def test_each_deposit_address_is_the_receiving_address_with_its_own_reference(solana, db):
    company = CompanyFactory()

    first = solana.new_deposit_address(company, "sol", 0)
    second = solana.new_deposit_address(company, "sol", 1)

    assert first[0] == second[0] == WALLET
    assert first[1] != second[1]
    assert len(bytes(Pubkey.from_string(first[1]))) == 32
    assert solana.new_deposit_address(company, "sol", 0) == first  # the same index, the same reference


def test_references_depend_on_the_server_secret(settings):
    before = keys.reference(7)

    settings.SECRET_KEY = "another secret that nobody outside knows, long enough to be a real one"

    assert keys.reference(7) != before


def test_the_pay_uri_is_solana_pay_with_the_reference(solana):
    reference = keys.reference(3)

    uri = solana.payment_uri("sol", WALLET, Decimal("1.250000"), reference)

    assert uri == f"solana:{WALLET}?amount=1.25&reference={reference}"


def test_production_takes_sol_on_the_solana_backend_with_a_configured_key_and_node(solana, settings):
    settings.EVM_SIGNER = "unix:/run/kassa/signer.sock"

    assert check_chain_backends() == []


def test_production_refuses_sol_payouts_signed_in_process_with_the_public_seed(solana, settings):
    settings.EVM_SIGNER = "local"

    errors = check_chain_backends()

    assert [error.id for error in errors] == ["kassa.E008"]
    assert "Payouts of sol are signed by the signer process" in errors[0].msg


def test_production_refuses_deposits_to_the_public_development_key(solana, settings):
    settings.CHAIN_XPUBS = {}

    errors = check_chain_backends()

    assert {error.id for error in errors} == {"kassa.E005", "kassa.E008"}
    (public,) = [error for error in errors if error.id == "kassa.E005"]
    assert "PUBLIC development key of the sol family" in public.msg


def test_a_malformed_receiving_key_is_refused_by_the_deployment_checks(solana, settings):
    settings.CHAIN_XPUBS = {"sol": "not a key"}

    errors = check_chain_backends()

    assert "kassa.E006" in {error.id for error in errors}


@pytest.mark.parametrize(
    ("network", "link"),
    [
        (None, "https://explorer.solana.com/tx/{txid}"),
        ("devnet", "https://explorer.solana.com/tx/{txid}?cluster=devnet"),
        ("testnet", "https://explorer.solana.com/tx/{txid}?cluster=testnet"),
        ("private", "{txid}"),
    ],
)
def test_the_explorer_link_follows_the_configured_network(solana, settings, network, link):
    signature = "5" * 88
    settings.CHAIN_NODES = {"sol": {"url": URL, **({"network": network} if network else {})}}

    assert solana.explorer_url("sol", signature) == link.format(txid=signature)


@pytest.mark.parametrize(
    ("nodes", "said"),
    [
        ({}, "no Solana node for sol"),
        ({"sol": {"url": "ftp://node"}}, "url"),
        ({"sol": {"url": URL, "x": 1}}, "x"),
        ({"sol": {"url": URL, "network": "mainnet-beta"}}, "network is one of"),
    ],
)
def test_a_node_entry_that_cannot_serve_is_refused_by_the_deployment_checks(solana, settings, nodes, said):
    settings.CHAIN_NODES = nodes

    errors = [error for error in check_chain_backends() if error.id == "kassa.E006"]

    assert len(errors) == 1 and said in errors[0].msg and "CHAIN_NODES" in (errors[0].hint or "")

"""CHAIN_NODES entries of the TRON codes: each mistake refused with the key to fix, at start-up (the
deployment checks) as well as when read; nothing guessed."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.core.exceptions import ImproperlyConfigured

from chains.backend import get_backend
from chains.checks import check_chain_backends
from chains.derivation import derive_internal_address, development_xpub
from chains.house import fee_coin
from chains.tron.config import scanned_codes, tron_config, tron_configs
from chains.tron.policy import SignRefused
from chains.tron.signer import configured_rules

URL = "http://127.0.0.1:8090"
USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"  # mainnet USDT
FOREIGN = "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH"  # an address of no key of the seed


def resource() -> str:
    """The seed's resource account (m/44'/195'/0'/1/1), which may lend its staked energy."""
    return derive_internal_address("tron", 1)


TOKEN = {"url": URL, "contract": USDT, "decimals": 6}


def test_a_good_configuration_is_read_exactly(settings):
    settings.CHAIN_BACKENDS = {"trx": "tron", "trc20usdt": "tron"}
    settings.CHAIN_NODES = {
        "trc20usdt": dict(
            TOKEN,
            api_key=" key ",
            sweep_min="5.5",
            fee_limit_cap=Decimal("40"),
            energy="delegate",
            resource_address=resource(),
            payout_limit=1000,
        ),
        "trx": {"url": URL, "api_key": "key", "payout_limit": "50"},
    }

    trx, usdt = tron_config("trx"), tron_config("trc20usdt")

    assert (trx.contract, trx.decimals, trx.energy, trx.sweep_min, trx.payout_limit) == (
        None,
        6,
        "burn",
        Decimal("10"),  # the asset's minimum withdrawal
        Decimal("50"),
    )
    assert (usdt.contract, usdt.decimals, usdt.sweep_min, usdt.fee_limit_cap) == (USDT, 6, Decimal("5.5"), 40)
    assert (usdt.energy, usdt.resource_address, usdt.resource_index, usdt.api_key, usdt.network) == (
        "delegate",
        resource(),
        1,
        "key",
        "mainnet",
    )
    assert scanned_codes() == ["trx", "trc20usdt"]  # trx leads the one cursor
    assert fee_coin("trc20usdt") == "trx"


def test_the_signing_rules_are_the_configured_contract_decimals_cap_and_limits(settings):
    settings.CHAIN_BACKENDS = {"trx": "tron", "trc20usdt": "tron"}
    settings.CHAIN_NODES = {
        "trc20usdt": dict(
            TOKEN,
            fee_limit_cap="40.5",
            payout_limit="1000",
            daily_limit="5000",
            energy="delegate",
            resource_address=resource(),
        ),
        "trx": {"url": URL, "payout_limit": "50"},
    }

    usdt, trx = configured_rules("trc20usdt"), configured_rules("trx")

    assert (usdt.code, usdt.contract, usdt.decimals, usdt.fee_limit_cap) == ("trc20usdt", USDT, 6, 40_500_000)
    assert (usdt.payout_limit, usdt.daily_limit, usdt.topup_cap) == (1000, 5000, Decimal("40.5"))
    assert (trx.contract, trx.decimals, trx.payout_limit, trx.daily_limit) == (None, 6, 50, None)
    assert (usdt.resource_index, trx.resource_index) == (1, None)  # its delegations are signed by 1/1


def test_a_code_without_a_tron_node_has_no_signing_rules(settings):
    settings.CHAIN_NODES = {"trx": {"url": URL}}

    with pytest.raises(SignRefused, match="no TRON signing rules for trc20usdt"):
        configured_rules("trc20usdt")


def test_a_token_alone_is_scanned_alone_and_sandbox_codes_are_not_scanned(settings):
    settings.CHAIN_BACKENDS = {"trc20usdt": "tron"}
    settings.CHAIN_NODES = {"trc20usdt": TOKEN, "trx": {"url": URL}}  # trx stays on the sandbox

    assert scanned_codes() == ["trc20usdt"]
    assert get_backend("trc20usdt").scan_codes("trc20usdt") == ["trc20usdt"]


@pytest.mark.parametrize(
    ("nodes", "says"),
    [
        ({"trx": {}}, "CHAIN_NODES['trx'].url is the node's http(s)://"),
        ({"trx": {"url": "ws://x"}}, "url is the node's http(s)://"),
        ({"trx": {"url": URL, "gas": 1}}, "CHAIN_NODES['trx'] has unknown keys ['gas']"),
        ({"trx": {"url": URL, "contract": USDT}}, "CHAIN_NODES['trx'].contract: trx is the chain's coin"),
        ({"trx": {"url": URL, "energy": "burn"}}, "CHAIN_NODES['trx'].energy: trx is the chain's coin"),
        ({"trc20usdt": {"url": URL, "decimals": 6}}, "CHAIN_NODES['trc20usdt'].contract is the token's T..."),
        ({"trc20usdt": dict(TOKEN, contract="0x" + "ab" * 20)}, "contract is the token's T... contract"),
        ({"trc20usdt": dict(TOKEN, contract=USDT[:-1] + "u")}, "bad checksum"),
        ({"trc20usdt": dict(TOKEN, decimals=2)}, "trc20usdt'].decimals is a whole number from 6 to 36"),
        ({"trc20usdt": dict(TOKEN, decimals="6")}, "decimals is a whole number"),
        ({"trc20usdt": dict(TOKEN, energy="rent")}, "trc20usdt'].energy is one of burn, delegate"),
        ({"trc20usdt": dict(TOKEN, energy="delegate")}, "trc20usdt'].resource_address is the T... address"),
        (
            {"trc20usdt": dict(TOKEN, resource_address=FOREIGN)},
            'resource_address is used only with "energy"',
        ),
        (
            {"trc20usdt": dict(TOKEN, energy="delegate", resource_address=FOREIGN)},
            "resource_address is an account whose key the signer holds: the hot address T",
        ),
        ({"trc20usdt": dict(TOKEN, fee_limit_cap="0")}, "trc20usdt'].fee_limit_cap is a positive amount"),
        ({"trc20usdt": dict(TOKEN, fee_limit_cap="1.0000001")}, "fee_limit_cap is TRX to the sun"),
        ({"trc20usdt": dict(TOKEN, sweep_min=True)}, "trc20usdt'].sweep_min is a positive amount"),
        ({"trx": {"url": URL, "daily_limit": "-1"}}, "CHAIN_NODES['trx'].daily_limit is a positive amount"),
        ({"trx": {"url": URL, "network": "testnet"}}, "network is one of mainnet, nile, shasta, private"),
        ({"trx": {"url": URL, "solidity_url": "localhost:8091"}}, "solidity_url is an http(s):// address"),
        ({"trx": {"url": URL, "api_key": ""}}, "CHAIN_NODES['trx'].api_key is text"),
        ({"trx": {"url": URL}, "trc20usdt": dict(TOKEN, url="http://other:8090")}, "different urls"),
        ({"trx": {"url": URL, "network": "nile"}, "trc20usdt": TOKEN}, "different networks"),
    ],
)
def test_each_mistake_is_refused_with_the_key_to_fix(settings, nodes, says):
    settings.CHAIN_NODES = nodes

    with pytest.raises(ImproperlyConfigured, match=re.escape(says)):
        tron_configs()


def test_a_deployment_with_a_bad_entry_is_refused_at_start_naming_the_key(settings):
    settings.CHAIN_BACKENDS = {"trx": "tron", "trc20usdt": "tron"}
    settings.CHAIN_NODES = {"trx": {"url": URL}, "trc20usdt": dict(TOKEN, decimals=None)}
    settings.CHAIN_XPUBS = {"tron": development_xpub("tron")[:-1] + "x"}  # not even a key
    settings.SANDBOX_ENABLED = False

    errors = check_chain_backends()

    said = {(error.id, error.msg, error.hint) for error in errors}
    assert (
        "kassa.E006",
        "trc20usdt runs on the tron backend: "
        "CHAIN_NODES['trc20usdt'].decimals is a whole number from 6 to 36",
        "Fix CHAIN_NODES in the environment.",
    ) in said
    assert any(
        error.id == "kassa.E006" and 'CHAIN_XPUBS["tron"]' in (error.hint or "") for error in errors
    ), errors


def test_a_deployment_on_the_public_development_key_is_refused(settings):
    settings.CHAIN_BACKENDS = {"trx": "tron"}
    settings.CHAIN_NODES = {"trx": {"url": URL}}
    settings.CHAIN_XPUBS = {}
    settings.SANDBOX_ENABLED = False
    settings.EVM_SIGNER = "unix:/run/kassa/signer.sock"

    (error,) = check_chain_backends()

    assert error.id == "kassa.E005" and "PUBLIC development key of the tron family" in error.msg
    assert 'CHAIN_XPUBS["tron"]' in (error.hint or "")


def test_a_good_deployment_passes_the_checks(settings):
    settings.CHAIN_BACKENDS = {"trx": "tron", "trc20usdt": "tron"}
    settings.CHAIN_NODES = {"trx": {"url": URL}, "trc20usdt": TOKEN}
    settings.CHAIN_XPUBS = {"tron": _other_xpub()}
    settings.SANDBOX_ENABLED = False
    settings.EVM_SIGNER = "unix:/run/kassa/signer.sock"

    assert check_chain_backends() == []


@pytest.mark.parametrize(
    ("network", "link"),
    [
        ("mainnet", "https://tronscan.org/#/transaction/ab12"),
        ("nile", "https://nile.tronscan.org/#/transaction/ab12"),
        ("private", "ab12"),
    ],
)
def test_the_explorer_link_follows_the_network(settings, network, link):
    settings.CHAIN_BACKENDS = {"trx": "tron"}
    settings.CHAIN_NODES = {"trx": {"url": URL, "network": network}}

    assert get_backend("trx").explorer_url("trx", "ab12") == link


def _other_xpub() -> str:
    from bip_utils import Bip32Secp256k1

    return Bip32Secp256k1.FromSeedAndPath(bytes(range(32)), "m/44'/195'/0'").PublicKey().ToExtended()


def test_the_node_is_asked_with_the_configured_key_and_solidity_url(settings):
    settings.CHAIN_BACKENDS = {"trx": "tron"}
    settings.CHAIN_NODES = {"trx": {"url": URL, "api_key": "k3y", "solidity_url": "http://127.0.0.1:8091/"}}

    node = get_backend("trx").node("trx")

    assert (node.url, node.solidity_url) == (URL, "http://127.0.0.1:8091")
    assert node._headers["TRON-PRO-API-KEY"] == "k3y"


@pytest.mark.parametrize(
    ("signer", "refused"), [("", True), ("local", True), ("unix:/run/kassa/s.sock", False)]
)
def test_the_tron_backend_is_refused_without_the_signer_process(settings, signer, refused):
    settings.CHAIN_BACKENDS = {"trx": "tron"}
    settings.CHAIN_NODES = {"trx": {"url": URL}}
    settings.CHAIN_XPUBS = {"tron": _other_xpub()}
    settings.SANDBOX_ENABLED = False
    settings.EVM_SIGNER = signer

    errors = check_chain_backends()

    assert [error.id for error in errors] == (["kassa.E008"] if refused else [])


def test_the_signer_process_is_asked_for_once_for_evm_and_tron_together(settings):
    settings.CHAIN_BACKENDS = {"eth": "evm", "trx": "tron", "trc20usdt": "tron"}
    settings.CHAIN_NODES = {
        "eth": {"url": "http://127.0.0.1:8545", "chain_id": 1},
        "trx": {"url": URL},
        "trc20usdt": TOKEN,
    }
    settings.SANDBOX_ENABLED = False
    settings.EVM_SIGNER = "local"

    [refused] = [error for error in check_chain_backends() if error.id == "kassa.E008"]

    assert refused.msg.startswith("Payouts of eth, trc20usdt, trx are signed by the signer process")
    assert "EVM_SIGNER" in refused.msg and "run_signer" in (refused.hint or "")

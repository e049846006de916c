"""The ton backend's keys, configuration and deployment checks (no devnet): the house wallet of
CHAIN_XPUBS["ton"], each mistake refused with the key to fix, the development key refused in production,
the sandbox's TON untouched, production taking the backend on the operator's key and signer process, and
a withdrawal of ton that waits while toncenter cannot be reached."""

from __future__ import annotations

import re

import pytest
from bip_utils import Ed25519PublicKey
from django.core.exceptions import ImproperlyConfigured
from nacl.signing import SigningKey

from chains.backend import get_backend
from chains.checks import check_chain_backends
from chains.derivation import DEVELOPMENT_TON_ADDRESS, derive_address
from chains.models import ChainTx
from chains.ton.keys import development_public_key, house_display
from chains.ton.wallet import wallet_v4r2_address
from tests.chain import send_payouts
from tests.factories import WithdrawalFactory

URL = "https://toncenter.example/api/v2"
OWN_KEY = bytes(SigningKey(bytes(range(32))).verify_key)


def own_house() -> str:
    return wallet_v4r2_address(OWN_KEY).to_str(is_bounceable=False, is_url_safe=True)


@pytest.fixture
def ton(settings):
    settings.CHAIN_BACKENDS = {"ton": "ton"}
    settings.CHAIN_NODES = {"ton": {"url": URL}}
    settings.CHAIN_XPUBS = {"ton": OWN_KEY.hex()}
    settings.SANDBOX_ENABLED = False
    settings.TON_DEPOSIT_ADDRESS = ""
    settings.EVM_SIGNER = "unix:/run/kassa/signer.sock"  # the signer process signs its payouts
    return settings


def test_the_development_key_is_the_sandboxs_ton_wallet(settings):
    settings.CHAIN_XPUBS = {}

    assert wallet_v4r2_address(development_public_key()).to_str(is_bounceable=False, is_url_safe=True) == (
        DEVELOPMENT_TON_ADDRESS
    )
    assert house_display() == DEVELOPMENT_TON_ADDRESS


def test_the_house_wallet_is_the_v4r2_of_the_configured_key_shown_non_bounceable(ton, db):
    backend = get_backend("ton")

    address, tag = backend.new_deposit_address(None, "ton", 41)

    assert (address, tag) == (own_house(), "416")  # 41 and its check digit
    assert address.startswith("UQ") and backend.hot_address("ton") == address
    assert derive_address("btc", 0)[0].startswith("bc1q")  # a "ton" key in CHAIN_XPUBS troubles no family


def test_the_sandboxs_ton_keeps_its_deposit_address(settings):
    settings.CHAIN_BACKENDS = {}
    settings.CHAIN_XPUBS = {"ton": OWN_KEY.hex()}
    settings.TON_DEPOSIT_ADDRESS = ""

    assert derive_address("ton", 7) == (DEVELOPMENT_TON_ADDRESS, "76")


def _off_curve() -> bytes:
    return next(
        candidate for n in range(256) if not Ed25519PublicKey.IsValidBytes(candidate := bytes([n]) * 32)
    )


@pytest.mark.parametrize(
    ("key", "says"),
    [
        (
            "xpub6CUGRUonZSQ4TWtTMmzXdrXDtypWKiKrhko4egpiMZbpiaQL2jkwSB1icqYh2cfDfVxdx4df189oLKnC5fSwqPfgyP3hooxujYzAu3fDVmz",
            "64 hexadecimal",
        ),
        ("eVLpQRjzRgfHXiMljdkiDWbMrFo+4HQSXCUGjoEHv78=", "64 hexadecimal"),  # base64: not the form we take
        (OWN_KEY.hex()[:-2], "not 62"),
        (SigningKey(bytes(32)).encode().hex() + OWN_KEY.hex(), "treat this secret key as leaked"),
        (None, "not a point of the curve"),
    ],
)
def test_a_malformed_house_key_is_refused_with_the_key_to_fix(ton, key, says):
    ton.CHAIN_XPUBS = {"ton": key if key is not None else _off_curve().hex()}

    with pytest.raises(ImproperlyConfigured, match=re.escape(says)) as refused:
        house_display()

    assert 'CHAIN_XPUBS["ton"]' in str(refused.value)
    assert key is None or key not in str(refused.value)  # never echoed: it may be a secret


def test_production_takes_the_ton_backend_on_its_own_key_and_the_signer_process(ton):
    assert check_chain_backends() == []  # it pays withdrawals: nothing refused

    ton.EVM_SIGNER = "local"  # the in-process signer holds the public development seed
    assert [error.id for error in check_chain_backends()] == ["kassa.E008"]


@pytest.mark.parametrize("key", [None, "development"])
def test_production_refuses_the_ton_backend_on_the_public_development_key(ton, key):
    ton.CHAIN_XPUBS = {} if key is None else {"ton": development_public_key().hex()}

    errors = {error.id: error for error in check_chain_backends()}

    assert set(errors) == {"kassa.E005"}
    assert "PUBLIC development key of the ton family" in errors["kassa.E005"].msg
    assert 'CHAIN_XPUBS["ton"]' in (errors["kassa.E005"].hint or "")


@pytest.mark.parametrize(
    ("change", "says", "variable"),
    [
        ({"CHAIN_XPUBS": {"ton": "not-a-key"}}, "64 hexadecimal characters", 'CHAIN_XPUBS["ton"]'),
        ({"CHAIN_NODES": {}}, 'CHAIN_NODES has no "ton" entry', "CHAIN_NODES"),
        ({"CHAIN_NODES": {"ton": {"url": URL, "network": "testnet"}}}, "network is one of", "CHAIN_NODES"),
        ({"CHAIN_NODES": {"ton": {"url": "https://toncenter.example/"}}}, "ending in /api/v2", "CHAIN_NODES"),
        ({"TON_DEPOSIT_ADDRESS": DEVELOPMENT_TON_ADDRESS}, "leave TON_DEPOSIT_ADDRESS empty", "CHAIN_NODES"),
    ],
)
def test_each_configuration_mistake_is_refused_at_start_naming_what_to_fix(ton, change, says, variable):
    for name, value in change.items():
        setattr(ton, name, value)

    refused = [error for error in check_chain_backends() if error.id == "kassa.E006"]

    assert refused and says in refused[0].msg and variable in (refused[0].hint or ""), refused


def test_the_sandboxs_address_may_stay_when_it_is_the_house_wallet(ton):
    ton.TON_DEPOSIT_ADDRESS = own_house()

    assert check_chain_backends() == []


@pytest.mark.parametrize(
    ("network", "link"), [("mainnet", "https://tonviewer.com/transaction/ab12"), ("private", "ab12")]
)
def test_the_explorer_link_follows_the_network(ton, network, link):
    ton.CHAIN_NODES = {"ton": {"url": URL, "network": network}}

    assert get_backend("ton").explorer_url("ton", "ab12") == link


def test_a_withdrawal_of_ton_waits_while_toncenter_cannot_be_reached(ton, db):
    withdrawal = WithdrawalFactory(asset="ton", amount="1", tag="order 7")

    assert send_payouts("ton") == []  # toncenter.example answers nothing: nothing is built or signed

    withdrawal.refresh_from_db()
    assert withdrawal.status == "processing" and withdrawal.txid == ""
    assert not ChainTx.objects.exists()

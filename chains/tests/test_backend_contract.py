"""The chain backend contract (chains.backend): every registered real backend implements all of it, and a
deployment naming an incomplete backend is refused by the deployment checks with the methods it lacks."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from chains.backend import BACKEND_PATHS, ChainBackend, get_backend, missing_methods
from chains.checks import check_chain_backends

REAL = tuple(BACKEND_PATHS)  # every registered backend: none may lack a method
DEPOSITS = {
    "new_deposit_address",
    "scan",
    "tip",
    "cursor_at",
    "recheck",
    "in_best_chain",
    "deposit_status",
    "explorer_url",
}
PAYOUTS = {"quote_fee", "build", "signer", "broadcast", "tx_status", "spendable", "bump", "child"}
ABSTRACT = DEPOSITS | PAYOUTS


def test_the_contract_declares_every_method_a_backend_must_implement() -> None:
    assert set(ChainBackend.__abstractmethods__) == ABSTRACT


@pytest.mark.parametrize("name", REAL)
def test_every_real_backend_implements_the_whole_contract(name: str) -> None:
    cls = import_string(BACKEND_PATHS[name])

    assert issubclass(cls, ChainBackend) and cls.name == name
    assert missing_methods(cls) == []
    assert isinstance(cls(), ChainBackend)  # instantiable: no abstract method left


class DepositsOnly(ChainBackend):
    """A backend whose payout side is not written: every deposit method, no payout method."""

    name = "deposits-only"


for _method in DEPOSITS:
    setattr(DepositsOnly, _method, lambda self, *args: None)
DepositsOnly.__abstractmethods__ = frozenset(PAYOUTS)


def test_an_incomplete_backend_lacks_exactly_what_it_does_not_implement() -> None:
    assert missing_methods(DepositsOnly) == sorted(PAYOUTS)
    with pytest.raises(TypeError):
        DepositsOnly()


def test_a_deployment_on_an_incomplete_backend_is_refused_naming_what_it_lacks(settings) -> None:
    settings.CHAIN_BACKENDS = {"trx": "chains.tests.test_backend_contract.DepositsOnly"}
    settings.SANDBOX_ENABLED = False

    errors = check_chain_backends()

    assert [error.id for error in errors] == ["kassa.E006"]
    message = errors[0].msg
    assert "CHAIN_BACKENDS['trx']" in message and "the deposits-only backend is not complete yet" in message
    assert message.endswith(f"it lacks {', '.join(sorted(PAYOUTS))}")
    assert "CHAIN_BACKENDS" in (errors[0].hint or "")
    with pytest.raises(ImproperlyConfigured, match="the deposits-only backend is not complete yet"):
        get_backend("trx")  # never an instance with methods missing


def test_a_class_that_is_not_a_backend_is_refused(settings) -> None:
    settings.CHAIN_BACKENDS = {"btc": "chains.tests.test_backend_contract.NotABackend"}
    settings.SANDBOX_ENABLED = False

    [error] = check_chain_backends()

    assert error.id == "kassa.E006" and "is not a chains.backend.ChainBackend" in error.msg


def test_a_code_of_a_family_the_backend_does_not_serve_is_refused(settings) -> None:
    settings.CHAIN_BACKENDS = {"sol": "bitcoincore"}
    settings.CHAIN_NODES = {"sol": {"url": "http://user:pass@127.0.0.1:1"}}
    settings.SANDBOX_ENABLED = False

    errors = [error for error in check_chain_backends() if error.id == "kassa.E006"]

    expected = "sol runs on the bitcoincore backend: the bitcoincore backend serves the bch, btc, ltc"
    [refused] = [error for error in errors if error.msg == f"{expected} families, not sol"]
    assert refused.hint == "Fix CHAIN_BACKENDS in the environment."  # the backend choice, not the node


class NotABackend:
    name = "duck"

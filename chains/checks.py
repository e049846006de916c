"""Deployment checks of the chain configuration (see payments/checks.py for how they run)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, register
from django.core.exceptions import ImproperlyConfigured

from core.assets import all_assets
from core.checks import TAG
from core.offer import on_sandbox_backend

if TYPE_CHECKING:
    from chains.backend import ChainBackend


@register(TAG, deploy=True)
def check_chain_backends(**kwargs: Any) -> list[CheckMessage]:
    """Something real to offer, never the sandbox beside it, and every real backend's deposits on keys the
    operator holds."""
    from chains.backend import BackendMismatch, get_backend
    from chains.signers import SEED_SIGNERS

    try:
        real = [asset for asset in all_assets() if not on_sandbox_backend(asset.code)]
        for asset in real:
            get_backend(asset.code)  # loads every configured backend: an unknown or incomplete one is refused
    except ImproperlyConfigured as exc:
        return [_invalid(str(exc), "CHAIN_BACKENDS")]
    errors: list[CheckMessage] = []
    if not real and not settings.SANDBOX_ENABLED:
        errors.append(
            Error(
                "Nothing would be offered: every payment code runs on the sandbox chain and the sandbox is "
                "off (SANDBOX_ENABLED is not set).",
                hint="Configure a real chain backend per payment code in the CHAIN_BACKENDS environment "
                "variable, or set SANDBOX_ENABLED=true for a sandbox-only deployment (no real money).",
                id="kassa.E004",
            )
        )
    if real and settings.SANDBOX_ENABLED:
        codes = ", ".join(asset.code for asset in real)
        errors.append(
            Error(
                f"The sandbox chain is on next to real chain backends ({codes}): any client could pay a real "
                "merchant's invoice with simulated money on the pay page, and the invoice would be done and "
                "the merchant credited.",
                hint="Set SANDBOX_ENABLED=false when CHAIN_BACKENDS names a real backend; a sandbox-only "
                "deployment (a demo, no real backend) may keep it on.",
                id="kassa.E010",
            )
        )
    errors += _signer_process([asset.code for asset in real if asset.family in SEED_SIGNERS])
    by_backend: dict[int, tuple[ChainBackend, list[str]]] = {}
    for asset in real:
        backend = get_backend(asset.code)
        by_backend.setdefault(id(backend), (backend, []))[1].append(asset.code)
        try:
            backend.check_config(asset.code)
        except ImproperlyConfigured as exc:
            variable = "CHAIN_BACKENDS" if isinstance(exc, BackendMismatch) else "CHAIN_NODES"
            errors.append(_invalid(f"{asset.code} runs on the {backend.name} backend: {exc}", variable))
    for backend, served in by_backend.values():
        errors += backend.deploy_checks(served)
    families = sorted({asset.family for asset in real})
    for family in families:
        served = [asset.code for asset in real if asset.family == family]
        backend = get_backend(served[0])  # a family's codes share its key (and, on a real chain, backend)
        variable = backend.deposit_key_setting(served[0])
        try:
            public = backend.receives_on_development_key(served[0])
        except ImproperlyConfigured as exc:
            errors.append(_invalid(str(exc), variable))
            continue
        if public:
            codes = ", ".join(served)
            errors.append(
                Error(
                    f"Real chain backends ({codes}) would take deposits on the PUBLIC development key of the "
                    f"{family} family: anyone can spend what is sent there.",
                    hint=f"Set {variable} (the CHAIN_XPUBS or TON_DEPOSIT_ADDRESS environment variable) to "
                    'the public key (an account\'s extended public key; CHAIN_XPUBS["ton"]: the house '
                    "wallet's ed25519 key in hex; CHAIN_XPUBS[\"sol\"]: the receiving wallet's base58 public "
                    'key; CHAIN_XPUBS["near"]: the hot key\'s ed25519 key in hex; TON_DEPOSIT_ADDRESS: an '
                    "address) of a wallet you hold.",
                    id="kassa.E005",
                )
            )
    return errors


def _signer_process(codes: list[str]) -> list[CheckMessage]:
    """The codes whose payouts the signer process signs (its seed's families, chains.signers) need it: one
    refusal for all of them, whichever backends serve them."""
    if not codes or str(settings.EVM_SIGNER or "").startswith("unix:"):
        return []
    return [
        Error(
            f"Payouts of {', '.join(codes)} are signed by the signer process: EVM_SIGNER is not a unix: "
            f"socket ({settings.EVM_SIGNER!r}). The in-process signer holds the public development seed.",
            hint="Run `manage.py run_signer` as its own user and set "
            'EVM_SIGNER="unix:/run/kassa/signer.sock" (one signer process signs EVM, TRON, TON and '
            "Solana; docs/operations.md).",
            id="kassa.E008",
        )
    ]


def _invalid(problem: str, variable: str) -> CheckMessage:
    return Error(problem, hint=f"Fix {variable} in the environment.", id="kassa.E006")

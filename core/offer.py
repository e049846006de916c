"""Which payment codes this deployment offers, and which of them are simulated money.

Read from the settings alone (`CHAIN_BACKENDS`, `SANDBOX_ENABLED`), so every app can ask without loading a
chain backend: a code runs on the sandbox chain unless `CHAIN_BACKENDS` names a real backend for it, and
the sandbox serves its codes only when the deployment enables it (off by default in production).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed

from core.assets import Asset, all_assets, get_asset
from core.errors import UnsupportedAsset

SANDBOX_BACKEND = "sandbox"
# The sandbox backend named by its class path instead of its short name: the same backend.
_SANDBOX_NAMES = frozenset({SANDBOX_BACKEND, "chains.sandbox.SandboxBackend"})


def backend_name(code: str) -> str:
    """The backend `CHAIN_BACKENDS` names for the code (a short name or a class path); "sandbox" if none."""
    configured: dict[str, str] = settings.CHAIN_BACKENDS or {}
    return configured.get(get_asset(code).code, SANDBOX_BACKEND)


def sandbox_enabled() -> bool:
    """The sandbox chain serves its codes only when the deployment says so (off by default in production)."""
    return bool(settings.SANDBOX_ENABLED)


def on_sandbox_backend(code: str) -> bool:
    return backend_name(code) in _SANDBOX_NAMES


def is_sandbox(code: str) -> bool:
    """The code is served by the sandbox chain, and the sandbox is enabled: simulated money."""
    return on_sandbox_backend(code) and sandbox_enabled()


def is_offered(code: str) -> bool:
    """The code can be paid and withdrawn here: a real backend serves it, or the enabled sandbox does."""
    return not on_sandbox_backend(code) or sandbox_enabled()


@cache
def offered_assets() -> tuple[Asset, ...]:
    """The assets of the offered codes (`is_offered`), in registry order: worked out once per settings, as
    every invoice answer lists them."""
    return tuple(asset for asset in all_assets() if is_offered(asset.code))


def offered_codes() -> list[str]:
    return [asset.code for asset in offered_assets()]


def require_offered(code: str) -> Asset:
    """The asset of an offered code; any other is refused exactly like an unknown one (unsupported_asset)."""
    asset = get_asset(code)
    if not is_offered(asset.code):
        raise UnsupportedAsset(f"{asset.code} is not supported.")
    return asset


def sandbox_codes() -> list[str]:
    """Codes on the enabled sandbox chain; none when the sandbox is off."""
    return [asset.code for asset in all_assets() if is_sandbox(asset.code)]


def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting in {"CHAIN_BACKENDS", "SANDBOX_ENABLED", "ASSET_OVERRIDES"}:
        offered_assets.cache_clear()


setting_changed.connect(_reset)

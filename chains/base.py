"""The one interface every chain backend implements (docs/architecture.md), and the backend registry.

Which backend serves which payment code is the `CHAIN_BACKENDS` setting; every code runs on the sandbox
chain unless configured otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.utils.module_loading import import_string

from chains.derivation import derive_address
from payments.assets import Asset, all_assets, get_asset
from payments.errors import UnsupportedAsset

if TYPE_CHECKING:
    from payments.models import Company

FAILED = "failed"
FROZEN = "frozen"
PENDING = "pending"


@dataclass(frozen=True)
class ChainTransfer:
    """An incoming transfer as a chain reports it. `state` is pending until the chain fails or freezes it."""

    code: str
    txid: str
    output_index: int
    address: str
    tag: str
    amount: Decimal
    confirmations: int
    from_address: str = ""
    state: str = PENDING  # PENDING, FAILED (failed on chain) or FROZEN (blocked by compliance)


class ChainBackend(Protocol):
    name: str

    def new_deposit_address(self, company: Company, code: str, index: int) -> tuple[str, str | None]: ...

    def poll(self, code: str) -> list[ChainTransfer]: ...

    def send(self, code: str, *, reference: str, to: str, tag: str, amount: Decimal) -> str: ...

    def status(self, code: str, txid: str) -> int | str: ...

    def explorer_url(self, code: str, txid: str) -> str: ...


class XpubAddressesMixin:
    """Deposit addresses derived from the configured extended public keys (chains.derivation)."""

    def new_deposit_address(self, company: Company, code: str, index: int) -> tuple[str, str | None]:
        return derive_address(code, index)


BACKEND_PATHS = {"sandbox": "chains.sandbox.SandboxBackend"}


@cache
def _backends() -> dict[str, Any]:
    configured: dict[str, str] = settings.CHAIN_BACKENDS or {}
    unknown = set(configured) - {asset.code for asset in all_assets()}
    if unknown:
        raise ImproperlyConfigured(f"CHAIN_BACKENDS names unknown payment codes: {sorted(unknown)}")
    instances: dict[str, Any] = {}
    chosen: dict[str, Any] = {}
    for asset in all_assets():
        name = configured.get(asset.code, "sandbox")
        path = BACKEND_PATHS.get(name, name)
        if path not in instances:
            try:
                instances[path] = import_string(path)()
            except ImportError as exc:
                raise ImproperlyConfigured(f"CHAIN_BACKENDS[{asset.code!r}]: cannot load {path}") from exc
        chosen[asset.code] = instances[path]
    return chosen


def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting == "CHAIN_BACKENDS":
        _backends.cache_clear()


setting_changed.connect(_reset)


def get_backend(code: str) -> ChainBackend:
    return _backends()[get_asset(code).code]  # type: ignore[no-any-return]


def sandbox_enabled() -> bool:
    """The sandbox chain serves its codes only when the deployment says so (off by default in production)."""
    return bool(settings.SANDBOX_ENABLED)


def on_sandbox_backend(code: str) -> bool:
    return get_backend(code).name == "sandbox"


def is_sandbox(code: str) -> bool:
    """The code is served by the sandbox chain, and the sandbox is enabled: simulated money."""
    return on_sandbox_backend(code) and sandbox_enabled()


def is_offered(code: str) -> bool:
    """The code can be paid and withdrawn here: a real backend serves it, or the enabled sandbox does."""
    return not on_sandbox_backend(code) or sandbox_enabled()


def offered_codes() -> list[str]:
    return [asset.code for asset in all_assets() if is_offered(asset.code)]


def require_offered(code: str) -> Asset:
    """The asset of an offered code; any other is refused exactly like an unknown one (unsupported_asset)."""
    asset = get_asset(code)
    if not is_offered(asset.code):
        raise UnsupportedAsset(f"{asset.code} is not supported.")
    return asset


def sandbox_codes() -> list[str]:
    """Codes on the enabled sandbox chain; none when the sandbox is off."""
    return [asset.code for asset in all_assets() if is_sandbox(asset.code)]

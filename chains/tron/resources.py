"""The resource account of a token on `"energy": "delegate"` (docs/tron.md): its staked energy is lent to
deposit addresses for their sweeps, so the operator is told before it runs dry. Checked at each reading of
the payout wallet (chains.wallets, beat's payout monitor), by TronBackend.check_resources.

- What it has: `wallet/getaccountresource` of `resource_address`, EnergyLimit - EnergyUsed (energy it
  already lends is out of its limit).
- What one sweep needs: what the node measures (`triggerconstantcontract`) for a transfer of one unit of
  the token from the hot address to the resource account, an address that usually never held the token
  (the dearer kind of transfer: a recipient's first balance costs about twice the energy). Measured, never
  a number written here: the token's energy price changes with the chain (dynamic energy).
- Less than that: the `energy_low` alert (key: the code); enough again: resolved. While the hot address
  holds none of the token, nothing is measured and the alert is left as it is.
"""

from __future__ import annotations

import logging

from alerts.services import alert_raise, alert_resolve
from chains.tron.config import TronConfig
from chains.tron.node import TronNode, TronNodeError
from chains.tron.transaction import trc20_transfer_data

logger = logging.getLogger(__name__)

ENERGY_LOW = "energy_low"


def resource_energy_check(node: TronNode, config: TronConfig, hot: str) -> None:
    """Raise or resolve `energy_low` for `config`'s code; a code that does not delegate has none open."""
    if config.contract is None:
        return  # trx: nothing is delegated for it
    if config.energy != "delegate" or config.resource_address is None:
        alert_resolve(kind=ENERGY_LOW, key=config.code)  # one from before it burnt TRX instead
        return
    resource = config.resource_address
    try:
        left = node.account_resource(resource).energy_left
        measured = node.trigger_constant(hot, config.contract, trc20_transfer_data(resource, 1))
    except TronNodeError as exc:
        logger.warning(
            "%s: the energy of the resource account %s not checked: %s", config.code, resource, exc
        )
        return
    if measured.reverted:
        logger.info(
            "%s: the energy of the resource account %s not checked: no transfer to measure (%s)",
            config.code,
            resource,
            measured.message or "the hot address holds none of the token",
        )
        return
    needed = measured.energy_used
    if left >= needed:
        alert_resolve(kind=ENERGY_LOW, key=config.code)
        return
    alert_raise(
        kind=ENERGY_LOW,
        key=config.code,
        message=f"{config.code}: the resource account {resource} has {left} energy to lend, less than one "
        f"token transfer needs ({needed}): stake more TRX for energy there",
    )

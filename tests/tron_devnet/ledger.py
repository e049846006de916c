"""TRX and resources: balances, Stake 2.0 (frozen, delegated, acquired), bandwidth and energy usage that
recovers over 24 hours, and the chain parameters the fees come from. TRON's resource rules live here, in
one place, so they are easy to correct against mainnet:

- bandwidth of a transaction = its serialized size + 64 bytes; paid from staked bandwidth, else from the
  600 free bytes a day, else burnt at getTransactionFee sun a byte (BANDWITH_ERROR when the balance cannot);
  a transfer that creates an account pays getCreateAccountFee for its bandwidth instead, and
  getCreateNewAccountFeeInSystemContract (1 TRX) for the activation; a memo costs getMemoFee;
- energy for a contract call = staked energy left + what the balance can burn at getEnergyFee, capped by
  fee_limit / getEnergyFee; used from stake first, the rest burnt.

Approximations: staked resource is a fixed 10 energy / 1 bandwidth per staked TRX (mainnet divides a total
limit among all stakers); usage recovers linearly over 24 h; locks of delegations are not enforced; no
TRON power, votes or unfreezing (a control stakes, nothing unstakes)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

SUN = 1_000_000
DAY_MS = 86_400_000
ENERGY_PER_TRX = 10
NET_PER_TRX = 1
RESULT_BYTES = 64  # java-tron adds MAX_RESULT_SIZE_IN_TX to every transaction's size

PARAMETERS: dict[str, int] = {
    "getMaintenanceTimeInterval": 21_600_000,
    "getAccountUpgradeCost": 9_999_000_000,
    "getCreateAccountFee": 100_000,
    "getTransactionFee": 1_000,
    "getAssetIssueFee": 1_024_000_000,
    "getWitnessPayPerBlock": 16_000_000,
    "getWitnessStandbyAllowance": 115_200_000_000,
    "getCreateNewAccountFeeInSystemContract": 1_000_000,
    "getCreateNewAccountBandwidthRate": 1,
    "getAllowCreationOfContracts": 1,
    "getRemoveThePowerOfTheGr": -1,
    "getEnergyFee": 420,
    "getExchangeCreateFee": 1_024_000_000,
    "getMaxCpuTimeOfOneTx": 80,
    "getAllowUpdateAccountName": 0,
    "getAllowSameTokenName": 1,
    "getAllowDelegateResource": 1,
    "getTotalEnergyLimit": 180_000_000_000,
    "getAllowTvmTransferTrc10": 1,
    "getTotalEnergyCurrentLimit": 180_000_000_000,
    "getAllowMultiSign": 1,
    "getAllowAdaptiveEnergy": 0,
    "getUpdateAccountPermissionFee": 100_000_000,
    "getMultiSignFee": 1_000_000,
    "getAllowTvmConstantinople": 1,
    "getAllowTvmSolidity059": 1,
    "getAllowTvmIstanbul": 1,
    "getMaxFeeLimit": 15_000_000_000,
    "getAllowNewResourceModel": 1,
    "getAllowTvmFreeze": 1,
    "getAllowTvmLondon": 1,
    "getFreeNetLimit": 600,
    "getTotalNetLimit": 43_200_000_000,
    "getMemoFee": 1_000_000,
    "getUnfreezeDelayDays": 14,
    "getAllowDynamicEnergy": 0,
    "getMaxDelegateLockPeriod": 864_000,
}
TOTAL_ENERGY_WEIGHT = PARAMETERS["getTotalEnergyCurrentLimit"] // ENERGY_PER_TRX
TOTAL_NET_WEIGHT = PARAMETERS["getTotalNetLimit"] // NET_PER_TRX


class Refused(Exception):
    """A transaction the node refuses: `code` is java-tron's response code (BANDWITH_ERROR ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def recovered(used: int, last_ms: int, now_ms: int) -> int:
    """What is left of `used` at `now_ms`: usage recovers linearly over a day."""
    if now_ms - last_ms >= DAY_MS:
        return 0
    return used * (DAY_MS - max(now_ms - last_ms, 0)) // DAY_MS


@dataclass
class Account:
    balance: int = 0
    create_time: int = 0
    frozen: dict[str, int] = field(default_factory=lambda: {"BANDWIDTH": 0, "ENERGY": 0})
    acquired: dict[str, int] = field(default_factory=lambda: {"BANDWIDTH": 0, "ENERGY": 0})
    delegated: dict[tuple[bytes, str], int] = field(default_factory=dict)  # (receiver, resource) -> sun
    free_net_used: int = 0
    free_net_time: int = 0
    net_used: int = 0
    net_time: int = 0
    energy_used: int = 0
    energy_time: int = 0

    def delegated_out(self, resource: str) -> int:
        return sum(sun for (_, kind), sun in self.delegated.items() if kind == resource)

    def stake_available(self, resource: str) -> int:
        """Own stake not delegated away: what may still be delegated."""
        return self.frozen[resource] - self.delegated_out(resource)

    def energy_limit(self) -> int:
        return (self.stake_available("ENERGY") + self.acquired["ENERGY"]) // SUN * ENERGY_PER_TRX

    def net_limit(self) -> int:
        return (self.stake_available("BANDWIDTH") + self.acquired["BANDWIDTH"]) // SUN * NET_PER_TRX

    def energy_left(self, now: int) -> int:
        return max(self.energy_limit() - recovered(self.energy_used, self.energy_time, now), 0)

    def net_left(self, now: int) -> int:
        return max(self.net_limit() - recovered(self.net_used, self.net_time, now), 0)

    def free_net_left(self, now: int) -> int:
        limit = PARAMETERS["getFreeNetLimit"]
        return max(limit - recovered(self.free_net_used, self.free_net_time, now), 0)

    def use_energy(self, energy: int, now: int) -> None:
        self.energy_used = recovered(self.energy_used, self.energy_time, now) + energy
        self.energy_time = now


@dataclass
class NetCharge:
    """How a transaction's bandwidth is paid: staked or free bytes (net_usage) or burnt sun (net_fee)."""

    size: int
    staked: int = 0
    free: int = 0
    fee: int = 0

    @property
    def usage(self) -> int:
        return self.staked + self.free


class Ledger:
    def __init__(self) -> None:
        self.accounts: dict[bytes, Account] = {}

    def snapshot(self) -> dict[bytes, Account]:
        return copy.deepcopy(self.accounts)

    def restore(self, accounts: dict[bytes, Account]) -> None:
        self.accounts = copy.deepcopy(accounts)

    def get(self, address: bytes) -> Account | None:
        return self.accounts.get(address)

    def create(self, address: bytes, now: int) -> Account:
        account = self.accounts[address] = Account(create_time=now)
        return account

    def net_charge(self, account: Account, size: int, now: int, *, creates_account: bool) -> NetCharge:
        """The bandwidth bill (not yet applied); BANDWITH_ERROR when nothing can pay it."""
        charge = NetCharge(size=size)
        rate = PARAMETERS["getCreateNewAccountBandwidthRate"]
        if creates_account:
            if account.net_left(now) >= size * rate:
                charge.staked = size * rate
            else:
                charge.fee = PARAMETERS["getCreateAccountFee"]
        elif account.net_left(now) >= size:
            charge.staked = size
        elif account.free_net_left(now) >= size:
            charge.free = size
        else:
            charge.fee = size * PARAMETERS["getTransactionFee"]
        if charge.fee > account.balance:
            raise Refused("BANDWITH_ERROR", "Account resource insufficient error.")
        return charge

    @staticmethod
    def pay_net(account: Account, charge: NetCharge, now: int) -> None:
        account.balance -= charge.fee
        if charge.staked:
            account.net_used = recovered(account.net_used, account.net_time, now) + charge.staked
            account.net_time = now
        if charge.free:
            account.free_net_used = recovered(account.free_net_used, account.free_net_time, now) + charge.free
            account.free_net_time = now

    @staticmethod
    def energy_budget(account: Account, fee_limit: int, now: int) -> int:
        """The energy a call may spend: stake left plus what the balance burns, capped by fee_limit."""
        price = PARAMETERS["getEnergyFee"]
        return min(account.energy_left(now) + account.balance // price, fee_limit // price)

    @staticmethod
    def pay_energy(account: Account, energy: int, now: int) -> tuple[int, int]:
        """Spend `energy`: (from stake, sun burnt)."""
        staked = min(account.energy_left(now), energy)
        if staked:
            account.use_energy(staked, now)
        burnt = (energy - staked) * PARAMETERS["getEnergyFee"]
        account.balance -= burnt
        return staked, burnt

    def stake(self, account: Account, sun: int, resource: str) -> None:
        account.balance -= sun
        account.frozen[resource] += sun

    def delegate(self, owner: Account, receiver_address: bytes, sun: int, resource: str) -> None:
        receiver = self.accounts[receiver_address]
        key = (receiver_address, resource)
        owner.delegated[key] = owner.delegated.get(key, 0) + sun
        receiver.acquired[resource] += sun

    def undelegate(self, owner: Account, receiver_address: bytes, sun: int, resource: str) -> None:
        key = (receiver_address, resource)
        owner.delegated[key] -= sun
        if not owner.delegated[key]:
            del owner.delegated[key]
        self.accounts[receiver_address].acquired[resource] -= sun

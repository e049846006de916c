# pragma version ~=0.4.3
"""
@title Kassa test fixture token (ERC-20)
@notice A TEST FIXTURE for Kassa's EVM tests, NOT a production token. The deployer (owner) mints at will
        and can block an account, as USDT's blacklist does: a transfer from or to a blocked account
        reverts, so a transaction sent with an explicit gas limit is mined with status 0.
        Compiled once by scripts/compile_token.py into token.json; never edit one without the other.
"""

event Transfer:
    sender: indexed(address)
    receiver: indexed(address)
    value: uint256

event Approval:
    owner: indexed(address)
    spender: indexed(address)
    value: uint256

name: public(String[32])
symbol: public(String[8])
decimals: public(uint8)
totalSupply: public(uint256)
balanceOf: public(HashMap[address, uint256])
allowance: public(HashMap[address, HashMap[address, uint256]])
owner: public(address)
blocked: public(HashMap[address, bool])


@deploy
def __init__(name: String[32], symbol: String[8], decimals: uint8):
    self.name = name
    self.symbol = symbol
    self.decimals = decimals
    self.owner = msg.sender


@internal
def _move(sender: address, receiver: address, amount: uint256):
    # The blacklist (test only): either side blocked reverts the whole transaction.
    assert not self.blocked[sender], "sender blocked"
    assert not self.blocked[receiver], "receiver blocked"
    assert self.balanceOf[sender] >= amount, "insufficient balance"
    self.balanceOf[sender] -= amount
    self.balanceOf[receiver] += amount
    log Transfer(sender=sender, receiver=receiver, value=amount)


@external
def transfer(receiver: address, amount: uint256) -> bool:
    self._move(msg.sender, receiver, amount)
    return True


@external
def transferFrom(sender: address, receiver: address, amount: uint256) -> bool:
    assert self.allowance[sender][msg.sender] >= amount, "insufficient allowance"
    self.allowance[sender][msg.sender] -= amount
    self._move(sender, receiver, amount)
    return True


@external
def approve(spender: address, amount: uint256) -> bool:
    self.allowance[msg.sender][spender] = amount
    log Approval(owner=msg.sender, spender=spender, value=amount)
    return True


@external
def mint(to: address, amount: uint256):
    # Test only: the owner creates tokens from nothing.
    assert msg.sender == self.owner, "only owner"
    self.totalSupply += amount
    self.balanceOf[to] += amount
    log Transfer(sender=empty(address), receiver=to, value=amount)


@external
def block(account: address, blocked: bool):
    # Test only: simulates a stablecoin blacklist (USDT's addBlackList).
    assert msg.sender == self.owner, "only owner"
    self.blocked[account] = blocked

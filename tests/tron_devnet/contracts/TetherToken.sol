// SPDX-License-Identifier: MIT
pragma solidity 0.8.26;

/// @title Kassa's TRON devnet stand-in for USDT (TRC-20), a TEST FIXTURE, not a production token.
/// @notice Shaped after Tether's TRC-20 contract: 6 decimals, the owner issues to itself, and the owner's
///         blacklist (addBlackList / removeBlackList / getBlackListStatus) stops a blacklisted address
///         from sending: `transfer` from it and `transferFrom` of its funds revert. As in Tether's
///         contract, a blacklisted address can still receive.
///         Compiled by compile.js into tether_token.json; never edit one without the other.
contract TetherToken {
    string public name;
    string public symbol;
    uint8 public decimals;
    uint256 public totalSupply;
    address public owner;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;
    mapping(address => bool) public isBlackListed;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);
    event Issue(uint256 amount);
    event AddedBlackList(address user);
    event RemovedBlackList(address user);

    modifier onlyOwner() {
        require(msg.sender == owner, "only owner");
        _;
    }

    constructor(uint256 initialSupply, string memory name_, string memory symbol_, uint8 decimals_) {
        owner = msg.sender;
        name = name_;
        symbol = symbol_;
        decimals = decimals_;
        totalSupply = initialSupply;
        balanceOf[msg.sender] = initialSupply;
        emit Transfer(address(0), msg.sender, initialSupply);
    }

    function transfer(address to, uint256 value) external returns (bool) {
        require(!isBlackListed[msg.sender], "blacklisted");
        _move(msg.sender, to, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        require(!isBlackListed[from], "blacklisted");
        require(allowance[from][msg.sender] >= value, "insufficient allowance");
        allowance[from][msg.sender] -= value;
        _move(from, to, value);
        return true;
    }

    function approve(address spender, uint256 value) external returns (bool) {
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function issue(uint256 amount) external onlyOwner {
        totalSupply += amount;
        balanceOf[owner] += amount;
        emit Issue(amount);
        emit Transfer(address(0), owner, amount);
    }

    function getBlackListStatus(address user) external view returns (bool) {
        return isBlackListed[user];
    }

    function addBlackList(address user) external onlyOwner {
        isBlackListed[user] = true;
        emit AddedBlackList(user);
    }

    function removeBlackList(address user) external onlyOwner {
        isBlackListed[user] = false;
        emit RemovedBlackList(user);
    }

    function _move(address from, address to, uint256 value) internal {
        require(balanceOf[from] >= value, "insufficient balance");
        balanceOf[from] -= value;
        balanceOf[to] += value;
        emit Transfer(from, to, value);
    }
}

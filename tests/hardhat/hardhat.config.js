// The hardhat node for Kassa's EVM smoke tests (tests/hardhat_node.py): chain id 31337, a block per transaction.
module.exports = {
  networks: {
    hardhat: {
      chainId: 31337,
      mining: { auto: true },
    },
  },
};

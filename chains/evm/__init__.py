"""The EVM backend: eth, bnb, usdterc20 and usdc over JSON-RPC, with sweeps and a separate signer."""

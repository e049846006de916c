"""The Solana family (sol): its thin JSON-RPC client (node), amounts (units), the reading of a payment's
transfers (transfers) and its CHAIN_NODES entry (config); not yet a backend (chains.backend)."""

"""Network families: deposit address derivation and chain backends (ARCHITECTURE.md, Chains)."""

"""Network families: deposit address derivation and chain backends (docs/architecture.md)."""

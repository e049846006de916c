"""Tools run beside Kassa, never by it: `make bench` (tools/bench)."""

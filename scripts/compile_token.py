r"""Compile the EVM test fixture token: chains/evm/contracts/Token.vy -> token.json (ABI + bytecode).

vyper is not a project dependency (nor in the lock); run this from a throwaway environment:

    python -m venv /tmp/vyper && /tmp/vyper/bin/pip install vyper==0.4.3 \
        && /tmp/vyper/bin/python scripts/compile_token.py

token.json records the sha256 of the Token.vy it was compiled from; chains/evm/tests/test_token_fixture.py
fails when the source changes without recompiling.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

CONTRACTS = Path(__file__).resolve().parent.parent / "chains" / "evm" / "contracts"
VYPER_VERSION = "0.4.3"


def main() -> int:
    try:
        import vyper  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        print(__doc__, file=sys.stderr)
        return 1
    if vyper.__version__ != VYPER_VERSION:
        print(f"needs vyper {VYPER_VERSION}, found {vyper.__version__}", file=sys.stderr)
        return 1
    source = (CONTRACTS / "Token.vy").read_bytes()
    out = vyper.compile_code(source.decode(), output_formats=["abi", "bytecode"])
    fixture = {
        "compiler": f"vyper {VYPER_VERSION}",
        "source_sha256": hashlib.sha256(source).hexdigest(),
        "abi": out["abi"],
        "bytecode": out["bytecode"],
    }
    (CONTRACTS / "token.json").write_text(json.dumps(fixture, sort_keys=True, indent=1) + "\n")
    print(f"wrote {CONTRACTS / 'token.json'} (vyper {VYPER_VERSION}, {len(out['bytecode']) // 2 - 1} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

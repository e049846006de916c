"""TronWeb's own protobuf encoder and signer, run offline, for golden vectors of Kassa's TRON client.

tests/tronweb pins TronWeb (package.json and package-lock.json); `npm ci --prefix tests/tronweb` installs it
(`.ci/run` and `make tronweb` do). On a machine without it the tests marked `tronweb` skip with the reason
(and CI, which allows no skip, fails). `tests/tronweb/vectors.js` reads a JSON list of cases on standard
input and writes TronWeb's answers; no network is used.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

from tests.workers import ROOT

TRONWEB_DIR = ROOT / "tests" / "tronweb"
SCRIPT = TRONWEB_DIR / "vectors.js"


def tronweb_available() -> bool:
    """TronWeb is installed in tests/tronweb (`npm ci --prefix tests/tronweb`) and node is on the PATH."""
    return (TRONWEB_DIR / "node_modules" / "tronweb" / "package.json").is_file() and bool(
        shutil.which("node")
    )


def tronweb_answers(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """TronWeb's answer to each case (see vectors.js), in order."""
    node = shutil.which("node") or "node"
    done = subprocess.run(
        [node, str(SCRIPT)], input=json.dumps(cases), capture_output=True, text=True, timeout=60, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"vectors.js failed ({done.returncode}):\n{done.stderr[-2000:]}")
    answers: list[dict[str, Any]] = json.loads(done.stdout)
    return answers

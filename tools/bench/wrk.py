"""wrk: make sure it is installed, write its Lua request script, run it and read its `--latency` report."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tools.bench.core import WrkSettings


class WrkError(RuntimeError):
    """wrk is missing and cannot be installed, or it did not produce a report."""


@dataclass(frozen=True)
class WrkReport:
    requests: int
    requests_per_s: float
    p50_ms: float
    p99_ms: float
    non_2xx: int  # wrk's "Non-2xx or 3xx responses" line (it counts status >= 400)
    socket_errors: dict[str, int]  # connect / read / write / timeout, all zero when the line is absent
    output: str

    def failures(self) -> list[str]:
        problems = []
        if self.non_2xx:
            problems.append(f"{self.non_2xx} of {self.requests} responses were not 2xx")
        errors = {kind: count for kind, count in self.socket_errors.items() if count}
        if errors:
            problems.append("socket errors: " + ", ".join(f"{k} {v}" for k, v in errors.items()))
        if not self.requests:
            problems.append("no request completed")
        return problems


def ensure_wrk() -> str:
    """Path of wrk, installing the Debian package first when missing (needs root; a fresh box is root)."""
    found = shutil.which("wrk")
    if found:
        return found
    if not shutil.which("apt-get"):
        raise WrkError("wrk is not installed and there is no apt-get; install wrk and run again.")
    if os.geteuid() != 0:
        raise WrkError("wrk is not installed; run `sudo apt-get install -y wrk` (or `make bench` as root).")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-qq", "wrk"]
    print("wrk is missing; installing the Debian package ...", flush=True)
    # A fresh container has no package lists yet: only then is the slower `apt-get update` worth it.
    # dpkg's progress lines go nowhere (stdout); apt's errors (stderr) still show.
    quiet = subprocess.DEVNULL
    if subprocess.run(install, env=env, stdout=quiet, check=False).returncode != 0:  # noqa: S603
        subprocess.run(["apt-get", "update", "-qq"], env=env, stdout=quiet, check=True)  # noqa: S607
        subprocess.run(install, env=env, stdout=quiet, check=True)  # noqa: S603
    found = shutil.which("wrk")
    if not found:
        raise WrkError("apt-get finished but wrk is still not on PATH.")
    return found


def lua_string(text: str) -> str:
    """A Lua string literal for any text: everything outside a safe set becomes a decimal byte escape."""
    safe = set(
        b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-./:,;=+*@!?#$%&()[]{}<>~^|`"
    )
    return '"' + "".join(chr(b) if b in safe else f"\\{b:03d}" for b in text.encode()) + '"'


def write_script(
    path: Path, *, method: str, body: str | None, headers: dict[str, str], clients: int = 0
) -> Path:
    """The request wrk repeats; a script is the only way to give wrk a method other than GET and a body.
    With `clients`, each request names the next of that many client addresses in X-Forwarded-For, taken
    from 198.18.0.0/15, the range set aside for benchmarks (RFC 2544): a header only, no traffic goes
    there."""
    lines = [f"wrk.method = {lua_string(method)}"]
    if body is not None:
        lines.append(f"wrk.body = {lua_string(body)}")
    lines += [f"wrk.headers[{lua_string(k)}] = {lua_string(v)}" for k, v in headers.items()]
    if clients:
        if not 1 <= clients <= 65536:
            raise ValueError(f"clients is 1 to 65,536, not {clients}")
        lines += [
            "local client = 0",
            "request = function()",
            f"  client = (client + 1) % {clients}",
            # wrk's Lua is LuaJIT (Lua 5.1): no integer division operator.
            "  local high, low = math.floor(client / 256), client % 256",
            '  wrk.headers["X-Forwarded-For"] = "198.18." .. high .. "." .. low',
            "  return wrk.format()",
            "end",
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


def run(wrk: str, url: str, script: Path, settings: WrkSettings, *, duration_s: int) -> WrkReport:
    """One wrk run against `url`; raises WrkError when wrk fails or prints no report."""
    command = [
        wrk,
        f"--threads={settings.threads}",
        f"--connections={settings.connections}",
        f"--duration={duration_s}s",
        f"--timeout={settings.timeout_s}s",
        f"--script={script}",
        "--latency",
        url,
    ]
    # The timeout is a backstop for a wedged wrk; it normally exits right after --duration.
    done = subprocess.run(  # noqa: S603
        command, capture_output=True, text=True, timeout=duration_s + settings.timeout_s + 30, check=False
    )
    if done.returncode != 0:
        raise WrkError(f"wrk exited with {done.returncode}: {done.stderr.strip() or done.stdout.strip()}")
    return parse(done.stdout)


_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}
_PERCENTILE = re.compile(r"^\s*(50|99)(?:\.0+)?%\s+([\d.]+)(us|ms|s|m|h)\s*$", re.MULTILINE)
_REQUESTS = re.compile(r"^\s*(\d+) requests in ", re.MULTILINE)
_RPS = re.compile(r"^Requests/sec:\s+([\d.]+)", re.MULTILINE)
_NON_2XX = re.compile(r"^\s*Non-2xx or 3xx responses:\s+(\d+)", re.MULTILINE)
_SOCKET = re.compile(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)")


def parse(output: str) -> WrkReport:
    """Read wrk 4.x text output (with --latency). Raises WrkError if a figure we need is missing."""
    percentiles = {int(p): float(value) * _UNITS_MS[unit] for p, value, unit in _PERCENTILE.findall(output)}
    requests, rps = _REQUESTS.search(output), _RPS.search(output)
    if requests is None or rps is None or set(percentiles) != {50, 99}:
        raise WrkError(f"could not read wrk's report:\n{output}")
    non_2xx = _NON_2XX.search(output)
    socket = _SOCKET.search(output)
    counts = [int(n) for n in socket.groups()] if socket else [0, 0, 0, 0]
    return WrkReport(
        requests=int(requests.group(1)),
        requests_per_s=float(rps.group(1)),
        p50_ms=percentiles[50],
        p99_ms=percentiles[99],
        non_2xx=int(non_2xx.group(1)) if non_2xx else 0,
        socket_errors=dict(zip(("connect", "read", "write", "timeout"), counts, strict=True)),
        output=output,
    )

"""`make audit`: the dependency lock is complete, hash-pinned, matches pyproject and the installed
environment, and no pinned version is named by an advisory of the offline database (when one is given).

Advisory data: a directory of OSV-format JSON advisories (the format of the PyPA advisory database,
https://github.com/pypa/advisory-database, and of osv.dev exports), named by `--advisories` or the
KASSA_ADVISORY_DB environment variable. The machines this project is built on reach only the package
registries, and the registry here serves no advisory data, so no copy is bundled (see docs/operations.md,
"Dependencies and advisories"); without one, the advisory part says so and the lock checks still run.
Exit status 1 on any problem.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parent.parent
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s\\;]+)")


def read_lock(path: Path) -> tuple[dict[str, Version], list[str]]:
    """{canonical name: pinned version} of the pins that apply here (environment markers evaluated), and
    the problems: a line that pins loosely or has no hash."""
    pins: dict[str, Version] = {}
    elsewhere: set[str] = set()
    problems: list[str] = []
    current: str | None = None
    hashed: set[str] = set()
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("--hash="):
            if current:
                hashed.add(current)
            continue
        match = _PIN.match(line)
        if not match:
            problems.append(f"{path.name}: not an exact pin: {line}")
            current = None
            continue
        current = canonicalize_name(match.group(1))
        marker = line.split(";", 1)[1].split("\\")[0].strip() if ";" in line else ""
        if marker and not Marker(marker).evaluate():
            elsewhere.add(current)  # e.g. a backport for an older Python than this one
        else:
            pins[current] = Version(match.group(2))
        if "--hash=" in line:
            hashed.add(current)
    problems += [f"{path.name}: {name} has no --hash" for name in sorted((set(pins) | elsewhere) - hashed)]
    return pins, problems


def check_pyproject(pins: dict[str, Version], pyproject: Path) -> list[str]:
    """Every dependency of the project (runtime and dev) is in the lock, at a version it allows."""
    project = tomllib.loads(pyproject.read_text())["project"]
    wanted = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        wanted += extra
    problems = []
    for text in wanted:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        if name not in pins:
            problems.append(
                f"{requirement.name} is required by pyproject.toml but not in the lock (make lock)"
            )
        elif not requirement.specifier.contains(pins[name], prereleases=True):
            problems.append(
                f"{requirement.name}=={pins[name]} in the lock does not satisfy {text!r} (make lock)"
            )
    return problems


def check_installed(pins: dict[str, Version]) -> list[str]:
    """The running environment holds exactly the locked versions (make install)."""
    problems = []
    for name, version in sorted(pins.items()):
        try:
            installed = Version(metadata.version(name))
        except metadata.PackageNotFoundError:
            problems.append(f"{name}=={version} is locked but not installed (make install)")
            continue
        if installed != version:
            problems.append(f"{name} {installed} is installed, the lock says {version} (make install)")
    return problems


def _affected(version: Version, affected: dict) -> bool:
    listed = affected.get("versions") or []
    if str(version) in listed:
        return True
    for range_ in affected.get("ranges") or []:
        if range_.get("type") not in ("ECOSYSTEM", "SEMVER"):
            continue
        inside = False
        for event in range_.get("events", []):
            try:
                if "introduced" in event:
                    start = event["introduced"]
                    inside = start == "0" or version >= Version(start)
                elif inside:
                    fixed = "fixed" in event and version >= Version(event["fixed"])
                    after = "last_affected" in event and version > Version(event["last_affected"])
                    inside = not (fixed or after)
            except InvalidVersion:
                continue
        if inside:
            return True
    return False


def check_advisories(pins: dict[str, Version], database: Path) -> tuple[list[str], int]:
    """(advisories that name a pinned version, how many advisories were read)."""
    found: list[str] = []
    read = 0
    for path in sorted(database.rglob("*.json")):
        try:
            advisory = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        read += 1
        for affected in advisory.get("affected", []):
            package = affected.get("package", {})
            if package.get("ecosystem") != "PyPI":
                continue
            name = canonicalize_name(package.get("name", ""))
            if name in pins and _affected(pins[name], affected):
                aliases = ", ".join(advisory.get("aliases", [])[:3])
                found.append(f"{name}=={pins[name]}: {advisory.get('id', path.stem)} {aliases}".rstrip())
    return found, read


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lock", type=Path, default=ROOT / "requirements" / "lock.txt")
    parser.add_argument("--pyproject", type=Path, default=ROOT / "pyproject.toml")
    parser.add_argument("--advisories", type=Path, default=os.environ.get("KASSA_ADVISORY_DB") or None)
    parser.add_argument("--skip-installed", action="store_true", help="do not compare with this environment")
    args = parser.parse_args(argv)

    pins, problems = read_lock(args.lock)
    problems += check_pyproject(pins, args.pyproject)
    if not args.skip_installed:
        problems += check_installed(pins)
    print(f"lock: {len(pins)} packages pinned with hashes in {args.lock.name}")
    if args.advisories:
        if not args.advisories.is_dir():
            problems.append(f"advisory database {args.advisories} is not a directory")
        else:
            found, read = check_advisories(pins, args.advisories)
            print(f"advisories: {read} read from {args.advisories}, {len(found)} affect a pinned version")
            problems += [f"known vulnerability: {line}" for line in found]
    else:
        print(
            "advisories: no offline advisory database given (KASSA_ADVISORY_DB or --advisories); "
            "the registry reachable here serves none. See docs/operations.md, Dependencies and advisories."
        )
    for problem in problems:
        print(f"  FAIL {problem}")
    print("audit OK" if not problems else f"audit FAILED: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

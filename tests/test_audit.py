"""`make audit` (scripts/audit.py): it fails on a loose pin, a missing hash, a stale lock and a pinned
version named by an advisory, and passes on the repository's own lock."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "audit.py"
HASH = "--hash=sha256:" + "0" * 64


def _audit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60, check=False
    )


def _pyproject(tmp_path: Path, *dependencies: str) -> Path:
    path = tmp_path / "pyproject.toml"
    listed = ", ".join(f'"{item}"' for item in dependencies)
    path.write_text(f'[project]\nname = "x"\nversion = "1"\ndependencies = [{listed}]\n')
    return path


def _advisory(tmp_path: Path, name: str, introduced: str, fixed: str) -> Path:
    database = tmp_path / "advisories"
    database.mkdir(exist_ok=True)
    (database / f"PYSEC-TEST-{name}.json").write_text(
        json.dumps(
            {
                "id": f"PYSEC-TEST-{name}",
                "aliases": ["CVE-0000-0001"],
                "affected": [
                    {
                        "package": {"ecosystem": "PyPI", "name": name},
                        "ranges": [
                            {"type": "ECOSYSTEM", "events": [{"introduced": introduced}, {"fixed": fixed}]}
                        ],
                    }
                ],
            }
        )
    )
    return database


def test_the_repository_lock_passes():
    result = _audit()

    assert result.returncode == 0, result.stdout + result.stderr
    assert "audit OK" in result.stdout


@pytest.mark.parametrize(("pinned", "fails"), [("5.2.1", True), ("5.2.2", False), ("5.1.9", False)])
def test_a_pinned_version_fails_only_inside_an_advisory_range(tmp_path, pinned, fails):
    lock = tmp_path / "lock.txt"
    lock.write_text(f"django=={pinned} \\\n    {HASH}\n")
    pyproject = _pyproject(tmp_path, "django>=5")
    advisories = _advisory(tmp_path, "Django", "5.2", "5.2.2")

    result = _audit(
        "--lock",
        str(lock),
        "--pyproject",
        str(pyproject),
        "--advisories",
        str(advisories),
        "--skip-installed",
    )

    assert result.returncode == (1 if fails else 0), result.stdout
    found = f"known vulnerability: django=={pinned}: PYSEC-TEST-Django CVE-0000-0001" in result.stdout
    assert found is fails


def test_a_loose_pin_a_missing_hash_and_a_stale_lock_fail(tmp_path):
    lock = tmp_path / "lock.txt"
    lock.write_text(f"django>=5.2\nrequests==2.0.0\ncelery==5.5.0 \\\n    {HASH}\n")
    pyproject = _pyproject(tmp_path, "celery>=5.6", "redis>=5")

    result = _audit("--lock", str(lock), "--pyproject", str(pyproject), "--skip-installed")

    assert result.returncode == 1
    assert "not an exact pin: django>=5.2" in result.stdout
    assert "requests has no --hash" in result.stdout
    assert "celery==5.5.0 in the lock does not satisfy" in result.stdout
    assert "redis is required by pyproject.toml but not in the lock" in result.stdout

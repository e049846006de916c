"""The settings paths: production passes `check --deploy` and refuses to start without its secrets."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parent.parent


def _manage(*args, **env):
    base = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "FIELD_ENCRYPTION_KEY"}}
    base.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=base, capture_output=True, text=True, timeout=120
    )


def test_production_settings_pass_check_deploy(tmp_path):
    result = _manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DJANGO_SETTINGS_MODULE="config.settings.production",
        SECRET_KEY="x" * 20 + "-production-secret-key-with-enough-entropy-0123456789",
        FIELD_ENCRYPTION_KEY=Fernet.generate_key().decode(),
        ALLOWED_HOSTS="pay.example.com",
        KASSA_VAR_DIR=str(tmp_path),
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.mark.parametrize("missing", ["SECRET_KEY", "FIELD_ENCRYPTION_KEY"])
def test_production_refuses_to_start_without_its_secrets(tmp_path, missing):
    env = {
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "SECRET_KEY": "y" * 60,
        "FIELD_ENCRYPTION_KEY": Fernet.generate_key().decode(),
        "KASSA_VAR_DIR": str(tmp_path),
    }
    del env[missing]

    result = _manage("check", **env)

    assert result.returncode != 0
    assert missing in result.stderr


def test_development_keys_are_generated_once_under_var(tmp_path):
    from payments.keys import development_key

    first = development_key(tmp_path / "k", "fernet")
    second = development_key(tmp_path / "k", "fernet")

    assert first == second
    Fernet(first.encode())  # a valid Fernet key
    assert (tmp_path / "k").stat().st_mode & 0o777 == 0o600

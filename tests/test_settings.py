"""Settings entry points: the production commands of docs/operations.md work as written, development says so.

The refusals themselves are in tests/test_production_settings.py.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent


def _readme_production_section() -> str:
    text = (ROOT / "docs" / "operations.md").read_text()
    return text.split("\n## Production\n", 1)[1].split("\n## ", 1)[0]


def _code_lines(section: str) -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", section, flags=re.DOTALL)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_readme_production_commands_make_keys_that_production_accepts(tmp_path):
    lines = _code_lines(_readme_production_section())
    key_commands = [line.split("#")[0].strip() for line in lines if line.startswith('python -c "')]
    assert len(key_commands) == 2, lines  # SECRET_KEY, then FIELD_ENCRYPTION_KEY
    secret_key, field_key = (
        subprocess.run(
            [sys.executable, *shlex.split(command)[1:]], capture_output=True, text=True, check=True
        ).stdout.strip()
        for command in key_commands
    )
    check = next(line for line in lines if line.endswith("manage.py check --deploy"))
    env = {
        "PATH": os.environ.get("PATH", ""),
        "KASSA_VAR_DIR": str(tmp_path),
        "SECRET_KEY": secret_key,
        "FIELD_ENCRYPTION_KEY": field_key,
        "ALLOWED_HOSTS": "pay.example.com",
        "CSRF_TRUSTED_ORIGINS": "https://pay.example.com",
        "SANDBOX_ENABLED": "true",  # no real chain backend ships yet: a sandbox-only deployment
        "NUM_PROXIES": "1",  # the documented proxy in front (kassa.E009)
        "EMAIL_URL": "smtp+tls://kassa:pw@smtp.example.com:587",  # a mail server (kassa.E011)
    }

    # The README's command as written, with this checkout's interpreter for `.venv/bin/python`.
    result = subprocess.run(
        [sys.executable, *shlex.split(check)[1:], "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
    Fernet(field_key.encode())


def test_readme_production_commands_rely_on_the_default_settings_module():
    lines = _code_lines(_readme_production_section())
    commands = [line for line in lines if line.startswith(".venv/bin/")]

    assert [c.split()[0:3] for c in commands if "manage.py" not in c] == [
        [".venv/bin/gunicorn", "-c", "python:config.gunicorn"],
        [".venv/bin/celery", "-A", "config"],
        [".venv/bin/celery", "-A", "config"],
        [".venv/bin/celery", "-A", "config"],
    ]
    # The workers of the layout consume every queue between them, webhooks apart from payouts.
    consumed = [
        command.split("--queues ")[1].split()[0].split(",") for command in commands if " worker " in command
    ]
    assert sorted(queue for queues in consumed for queue in queues) == sorted(
        settings.CELERY_TASK_QUEUE_NAMES
    )
    assert ["webhooks"] in consumed
    assert all("DJANGO_SETTINGS_MODULE" not in line for line in lines)
    for variable in ("SECRET_KEY", "FIELD_ENCRYPTION_KEY", "DATABASE_URL", "REDIS_URL", "ALLOWED_HOSTS"):
        assert any(line.startswith(f"export {variable}=") for line in lines), variable
    for variable in ("CSRF_TRUSTED_ORIGINS", "CHAIN_XPUBS", "SANDBOX_ENABLED", "NUM_PROXIES", "EMAIL_URL"):
        assert any(line.startswith(f"export {variable}=") for line in lines), variable


def test_make_run_and_make_test_name_their_settings_module():
    # Every entry point defaults to production: the development stack and the test run must say so.
    assert "export DJANGO_SETTINGS_MODULE=config.settings.dev\n" in (ROOT / "scripts/run.sh").read_text()
    makefile = (ROOT / "Makefile").read_text()
    test_target = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert test_target.count("DJANGO_SETTINGS_MODULE=config.settings.test ") == 2  # makemigrations, pytest


def test_worker_processes_started_by_tests_name_their_settings_module(tmp_path, db):
    from tests.workers import worker_env

    assert worker_env(tmp_path)["DJANGO_SETTINGS_MODULE"] == "config.settings.dev"


def test_development_keys_are_generated_once_under_var(tmp_path):
    from core.keys import development_key

    first = development_key(tmp_path / "k", "fernet")
    second = development_key(tmp_path / "k", "fernet")

    assert first == second
    Fernet(first.encode())  # a valid Fernet key
    assert (tmp_path / "k").stat().st_mode & 0o777 == 0o600


def test_email_url_configures_the_smtp_server(tmp_path):
    """Password-reset mail goes through the server EMAIL_URL names, credentials and TLS included."""
    code = (
        "from django.conf import settings as s; "
        "print(s.EMAIL_BACKEND, s.EMAIL_HOST, s.EMAIL_PORT, s.EMAIL_HOST_USER, s.EMAIL_HOST_PASSWORD, "
        "s.EMAIL_USE_TLS, s.EMAIL_TIMEOUT)"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.dev",
        "KASSA_VAR_DIR": str(tmp_path),
        "EMAIL_URL": "smtp+tls://mailer:s3cret@smtp.example.com:587",
    }
    result = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )

    assert result.stdout.split() == [
        "django.core.mail.backends.smtp.EmailBackend",
        "smtp.example.com",
        "587",
        "mailer",
        "s3cret",
        "True",
        "10",
    ]


def test_the_embedded_defaults_workers_look_for_messages_ten_times_a_second(tmp_path):
    """The filesystem broker is polled: kombu's default 1 s sleep between listings was paid at every hop of a
    webhook (wake-up, delivery message, the next event of its object), seconds from commit to delivery."""
    code = (
        "from config.celery import app; "
        "connection = app.connection_for_read(); "
        "print(connection.transport.driver_type, connection.transport.polling_interval)"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.dev", "KASSA_VAR_DIR": str(tmp_path)}
    env.pop("REDIS_URL", None)
    result = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )

    assert result.stdout.split() == ["filesystem", "0.1"]


@pytest.mark.parametrize("name", ["CHAIN_XPUBS", "CHAIN_BACKENDS", "CHAIN_NODES", "ASSET_OVERRIDES"])
def test_a_json_setting_that_is_not_json_stops_the_start_naming_it_without_its_value(tmp_path, name):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.dev",
        "KASSA_VAR_DIR": str(tmp_path),
        name: "{'sol': 'secret-looking-value'",  # single quotes, unclosed: a shell-quoting slip
    }
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )

    assert result.returncode != 0
    assert f"ImproperlyConfigured: {name} is not valid JSON" in result.stderr
    assert "secret-looking-value" not in result.stderr
    assert "JSONDecodeError" not in result.stderr

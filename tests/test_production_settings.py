"""Production is the default and refuses to start on an unsafe configuration.

Most tests run the real processes (`manage.py`, `celery -A config`, `import config.wsgi`) in a clean
environment: only the variables given, no DJANGO_SETTINGS_MODULE unless a test sets it, so they prove what
an operator's process does. The check functions themselves are also called in-process for the variants.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from bip_utils import Bip32KeyNetVersions, Bip32Secp256k1
from cryptography.fernet import Fernet
from django.core.management import call_command
from django.core.management.base import CommandError

from chains.derivation import development_xpub
from chains.sandbox import SandboxBackend
from payments.checks import check_field_encryption_key, check_secret_key

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
REAL_CHAIN = f"{__name__}.RealChain"
_ZPUB = Bip32KeyNetVersions(b"\x04\xb2\x47\x46", b"\x04\xb2\x43\x0c")
OWN_TON_KEY = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"  # RFC 8032 TEST 1: not ours


class RealChain(SandboxBackend):
    """Stands for a real chain backend: anything not named "sandbox" takes real money."""

    name = "real-test-chain"


def own_zpub() -> str:
    """A BIP-84 account key of a fresh random seed: a key the operator holds, not the development one."""
    account = Bip32Secp256k1.FromSeedAndPath(secrets.token_bytes(32), "m/84'/0'/0'", _ZPUB)
    return account.PublicKey().ToExtended()


def production_env(var_dir: Path, **overrides: str | None) -> dict[str, str]:
    """A good production environment (sandbox-only deployment); an override of None removes a variable."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "KASSA_VAR_DIR": str(var_dir),
        "SECRET_KEY": secrets.token_urlsafe(50),
        "FIELD_ENCRYPTION_KEY": Fernet.generate_key().decode(),
        "ALLOWED_HOSTS": "pay.example.com",
        "SANDBOX_ENABLED": "true",
        "NUM_PROXIES": "1",  # behind the TLS proxy production trusts (kassa.E009)
        "EMAIL_URL": "smtp+tls://kassa:pw@smtp.example.com:587",  # a real mail server (kassa.E011)
    }
    env.update({key: value for key, value in overrides.items() if value is not None})
    for key in [key for key, value in overrides.items() if value is None]:
        env.pop(key, None)
    return env


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)


def check_deploy(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], env)


def assert_refused(result: subprocess.CompletedProcess[str], error_id: str, variable: str) -> None:
    assert result.returncode != 0, result.stdout + result.stderr
    assert "Kassa refuses to start" in result.stderr, result.stderr
    # The error's own lines (message and hint) name the environment variable to set.
    assert f"  {error_id}: " in result.stderr, result.stderr
    block = result.stderr.split(f"  {error_id}: ", 1)[1].split("\n  kassa.E", 1)[0]
    assert "HINT:" in block and variable in block, block


# --- The default settings module -------------------------------------------------------------------------


def test_production_settings_pass_check_deploy(tmp_path):
    result = check_deploy(production_env(tmp_path))

    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_manage_py_defaults_to_production_settings(tmp_path):
    show = "from django.conf import settings; print(settings.SETTINGS_MODULE, settings.DEBUG)"

    result = run([sys.executable, "manage.py", "shell", "--no-imports", "-c", show], production_env(tmp_path))

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["config.settings.production", "False"]


def test_celery_app_defaults_to_production_settings(tmp_path):
    # What worker and beat do first: import the app, then load the task modules (django.setup()).
    script = (
        "from config.celery import app; app.loader.import_default_modules(); "
        "from django.conf import settings as s; print(s.SETTINGS_MODULE, s.WEBHOOK_ALLOW_PRIVATE_HOSTS)"
    )

    result = run([sys.executable, "-c", script], production_env(tmp_path))

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["config.settings.production", "False"]


@pytest.mark.parametrize("module", ["config.wsgi", "config.asgi"])
def test_wsgi_and_asgi_default_to_production_settings(tmp_path, module):
    script = f"import {module}; from django.conf import settings; print(settings.SETTINGS_MODULE)"

    good = run([sys.executable, "-c", script], production_env(tmp_path))
    bad = run([sys.executable, "-c", script], production_env(tmp_path, WEBHOOK_ALLOW_PRIVATE_HOSTS="true"))

    assert good.returncode == 0, good.stderr
    assert good.stdout.strip() == "config.settings.production"
    assert_refused(bad, "kassa.E003", "WEBHOOK_ALLOW_PRIVATE_HOSTS")


@pytest.mark.parametrize("command", ["worker", "beat"])
def test_worker_and_beat_refuse_unsafe_settings(tmp_path, command):
    env = production_env(tmp_path, WEBHOOK_ALLOW_PRIVATE_HOSTS="true", PYTHONPATH=str(ROOT))
    args = [str(BIN / "celery"), "-A", "config", command, "--loglevel", "INFO"]
    if command == "beat":
        args += ["--schedule", str(tmp_path / "beat-schedule")]

    # From tmp_path: the filesystem broker keeps its control folder in the working directory.
    result = subprocess.run(
        args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )

    assert_refused(result, "kassa.E003", "WEBHOOK_ALLOW_PRIVATE_HOSTS")


# --- What production refuses ---------------------------------------------------------------------------


def test_every_refusal_is_listed_at_once_and_no_development_key_is_made(tmp_path):
    env = production_env(tmp_path, SECRET_KEY=None, FIELD_ENCRYPTION_KEY=None, SANDBOX_ENABLED=None)

    result = check_deploy(env)

    assert_refused(result, "kassa.E001", "SECRET_KEY")
    assert "kassa.E002" in result.stderr and "FIELD_ENCRYPTION_KEY" in result.stderr
    assert "kassa.E004" in result.stderr and "SANDBOX_ENABLED" in result.stderr
    # The development fallbacks belong to dev/test settings only: production never writes a key file.
    assert not (tmp_path / "secret_key").exists()
    assert not (tmp_path / "field_encryption_key").exists()


def test_production_refuses_weak_secret_key(tmp_path):
    result = check_deploy(production_env(tmp_path, SECRET_KEY="a" * 50))

    assert_refused(result, "kassa.E001", "SECRET_KEY")


@pytest.mark.parametrize(
    "key",
    [
        "",
        "a" * 50,  # long enough, one character
        "abcd" * 20,  # four different characters
        secrets.token_urlsafe(30),  # 40 characters
        "django-insecure-" + secrets.token_urlsafe(50),  # what startproject writes for development
    ],
)
def test_weak_secret_keys_are_errors(settings, key):
    settings.SECRET_KEY = key

    assert [error.id for error in check_secret_key()] == ["kassa.E001"]


def test_a_random_secret_key_passes(settings):
    settings.SECRET_KEY = secrets.token_urlsafe(50)

    assert check_secret_key() == []


def test_production_refuses_malformed_field_encryption_key(tmp_path):
    # 32 bytes of hex is a common mistake: the right length of text, not urlsafe base64 of 32 bytes.
    result = check_deploy(production_env(tmp_path, FIELD_ENCRYPTION_KEY=secrets.token_hex(16)))

    assert_refused(result, "kassa.E002", "FIELD_ENCRYPTION_KEY")


@pytest.mark.parametrize(
    "value",
    [
        "",
        "   ",
        "not-a-key",
        Fernet.generate_key().decode()[:-2],  # truncated
        f"{Fernet.generate_key().decode()},not-a-key",  # a rotation list with one bad key
        ",",
    ],
)
def test_malformed_field_encryption_keys_are_errors(settings, value):
    settings.FIELD_ENCRYPTION_KEY = value

    errors = check_field_encryption_key()

    assert [error.id for error in errors] == ["kassa.E002"]
    assert all(part not in errors[0].msg for part in value.split(",") if len(part) > 3)  # never echoed


def test_a_rotation_list_of_fernet_keys_passes(settings):
    settings.FIELD_ENCRYPTION_KEY = f"{Fernet.generate_key().decode()}, {Fernet.generate_key().decode()},"

    assert check_field_encryption_key() == []


def test_production_refuses_private_webhook_hosts(tmp_path):
    result = check_deploy(production_env(tmp_path, WEBHOOK_ALLOW_PRIVATE_HOSTS="true"))

    assert_refused(result, "kassa.E003", "WEBHOOK_ALLOW_PRIVATE_HOSTS")


def test_production_refuses_when_nothing_is_offered(tmp_path):
    # Every code on the sandbox chain and the sandbox not enabled: no payment could ever be taken.
    result = check_deploy(production_env(tmp_path, SANDBOX_ENABLED=None))

    assert_refused(result, "kassa.E004", "SANDBOX_ENABLED")


def test_production_refuses_real_backend_with_development_xpub(tmp_path):
    backends = json.dumps({"btc": REAL_CHAIN})

    fallback = check_deploy(production_env(tmp_path, CHAIN_BACKENDS=backends, SANDBOX_ENABLED=None))
    copied = check_deploy(
        production_env(
            tmp_path,
            CHAIN_BACKENDS=backends,
            CHAIN_XPUBS=json.dumps({"btc": development_xpub("btc")}),  # the public key, configured by hand
            SANDBOX_ENABLED=None,
        )
    )

    assert_refused(fallback, "kassa.E005", 'CHAIN_XPUBS["btc"]')
    assert_refused(copied, "kassa.E005", 'CHAIN_XPUBS["btc"]')
    assert "kassa.E004" not in fallback.stderr  # a real backend is something to offer


def test_production_refuses_real_ton_backend_without_its_deposit_address(tmp_path):
    env = production_env(tmp_path, CHAIN_BACKENDS=json.dumps({"ton": REAL_CHAIN}))

    assert_refused(check_deploy(env), "kassa.E005", "TON_DEPOSIT_ADDRESS")


def test_production_takes_the_ton_backend_on_the_operators_own_key(tmp_path):
    env = production_env(
        tmp_path,
        CHAIN_BACKENDS=json.dumps({"ton": "ton"}),
        CHAIN_NODES=json.dumps({"ton": {"url": "https://toncenter.com/api/v2"}}),
        CHAIN_XPUBS=json.dumps({"ton": OWN_TON_KEY}),
        EVM_SIGNER="unix:/run/kassa/signer.sock",
        SANDBOX_ENABLED=None,
    )

    result = check_deploy(env)

    assert "kassa.E" not in result.stderr, result.stderr  # deposits and payouts: nothing refused


def test_production_refuses_malformed_xpub_of_a_real_backend(tmp_path):
    env = production_env(
        tmp_path,
        CHAIN_BACKENDS=json.dumps({"btc": REAL_CHAIN}),
        CHAIN_XPUBS=json.dumps({"btc": "zpub-typo"}),
    )

    assert_refused(check_deploy(env), "kassa.E006", 'CHAIN_XPUBS["btc"]')


def test_production_starts_with_a_real_backend_on_the_operators_key_and_no_sandbox(tmp_path):
    env = production_env(
        tmp_path,
        CHAIN_BACKENDS=json.dumps({"btc": REAL_CHAIN}),
        CHAIN_XPUBS=json.dumps({"btc": own_zpub()}),
        SANDBOX_ENABLED=None,
    )

    result = check_deploy(env)

    assert result.returncode == 0, result.stdout + result.stderr


def test_production_refuses_the_sandbox_next_to_a_real_backend(tmp_path):
    """With both, an anonymous client chose a sandbox code on the pay page, pressed the simulator's buttons,
    and a real merchant's invoice went done with the merchant credited."""
    mixed = production_env(
        tmp_path,
        CHAIN_BACKENDS=json.dumps({"btc": REAL_CHAIN}),
        CHAIN_XPUBS=json.dumps({"btc": own_zpub()}),
        SANDBOX_ENABLED="true",
    )

    assert_refused(check_deploy(mixed), "kassa.E010", "SANDBOX_ENABLED")
    # A sandbox-only deployment (a demo: nothing real) still starts.
    assert check_deploy(production_env(tmp_path)).returncode == 0


def test_development_settings_do_not_trip_the_startup_checks(tmp_path):
    # `make run`'s settings with no keys at all: development keys are made under var/ and the process starts.
    env = production_env(tmp_path, SECRET_KEY=None, FIELD_ENCRYPTION_KEY=None, SANDBOX_ENABLED=None)
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings.dev", "WEBHOOK_ALLOW_PRIVATE_HOSTS": "true"})

    result = run([sys.executable, "manage.py", "shell", "--no-imports", "-c", "print('started')"], env)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "started"
    assert (tmp_path / "secret_key").exists() and (tmp_path / "field_encryption_key").exists()


# --- demo_merchant -------------------------------------------------------------------------------------


def test_demo_merchant_refuses_in_production(tmp_path):
    result = run([sys.executable, "manage.py", "demo_merchant"], production_env(tmp_path))

    assert result.returncode != 0
    assert "development only" in result.stderr
    assert "kassa-demo-password" not in result.stdout + result.stderr
    assert not (tmp_path / "demo-merchant.json").exists()


@pytest.mark.django_db
def test_demo_merchant_creates_nothing_where_not_allowed(settings, tmp_path):
    from payments.models import Company

    settings.DEMO_MERCHANT_ALLOWED = False
    settings.VAR_DIR = tmp_path

    with pytest.raises(CommandError, match="development only"):
        call_command("demo_merchant")

    assert not Company.objects.exists()


# --- Start-up log of worker and beat ----------------------------------------------------------------------


@pytest.fixture
def worker_lines(tmp_path) -> Iterator[list[str]]:
    """Start `celery -A config worker` with production settings; yields its output lines as they come."""
    env = production_env(tmp_path, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    args = [str(BIN / "celery"), "-A", "config", "worker", "--pool", "solo", "--loglevel", "INFO"]
    process = subprocess.Popen(  # the control folder of the filesystem broker lands in cwd: tmp_path
        args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if " ready." in line:
                ready.set()
        ready.set()  # the process ended

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        ready.wait(timeout=90)
        yield lines
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=5)


def test_worker_logs_settings_module_and_ssrf_guard_state(worker_lines):
    started = [line for line in worker_lines if "Kassa worker settings" in line]

    assert started, "".join(worker_lines)
    assert "config.settings.production" in started[0]
    assert "SSRF guard on" in started[0]


def test_worker_start_up_log_says_when_the_ssrf_guard_is_off(settings, caplog):
    from config.celery import log_worker_settings

    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    with caplog.at_level(logging.INFO, logger="kassa.startup"):
        log_worker_settings()

    assert "config.settings.test" in caplog.text
    assert "SSRF guard OFF" in caplog.text


def test_beat_logs_its_settings_module(caplog):
    from config.celery import log_beat_settings

    with caplog.at_level(logging.INFO, logger="kassa.startup"):
        log_beat_settings()

    assert "Kassa beat settings: config.settings.test" in caplog.text


def test_production_refuses_the_evm_backend_without_the_signer_process(tmp_path):
    xpub = Bip32Secp256k1.FromSeedAndPath(secrets.token_bytes(32), "m/44'/60'/0'").PublicKey().ToExtended()
    evm = {
        "CHAIN_BACKENDS": json.dumps({"eth": "evm"}),
        "CHAIN_NODES": json.dumps({"eth": {"url": "http://127.0.0.1:8545", "chain_id": 1}}),
        "CHAIN_XPUBS": json.dumps({"evm": xpub}),
        "SANDBOX_ENABLED": None,
    }

    without = check_deploy(production_env(tmp_path, **evm))
    local = check_deploy(production_env(tmp_path, EVM_SIGNER="local", **evm))
    bad_node = check_deploy(
        production_env(
            tmp_path,
            EVM_SIGNER="unix:/run/kassa/signer.sock",
            **{**evm, "CHAIN_NODES": json.dumps({"eth": {"url": "http://127.0.0.1:8545"}})},
        )
    )
    signer = check_deploy(production_env(tmp_path, EVM_SIGNER="unix:/run/kassa/signer.sock", **evm))

    assert_refused(without, "kassa.E008", "EVM_SIGNER")
    assert_refused(local, "kassa.E008", "EVM_SIGNER")  # the in-process signer never reaches production
    assert_refused(bad_node, "kassa.E006", "CHAIN_NODES")
    assert signer.returncode == 0, signer.stdout + signer.stderr

"""The systemd units of deploy/systemd/ (docs/operations.md#running-under-systemd) cannot rot silently: the
documentation shows them as they are, each long-running service is hardened, each ExecStart names real
modules and flags, the queue groups are the settings' queues, and a real gunicorn started with the web
unit's flags writes JSON lines carrying the request id its response showed."""

from __future__ import annotations

import importlib.util
import itertools
import json
import shlex
import shutil
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings
from django.utils.module_loading import import_string

from tests.test_production_settings import production_env
from tests.workers import wait_for

ROOT = Path(__file__).resolve().parent.parent
UNITS = ROOT / "deploy" / "systemd"
CHECKOUT = "/opt/kassa"
METRICS_DIR = "/run/kassa-metrics"
HARDENING = {
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "CapabilityBoundingSet": "",
    "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
    "SystemCallFilter": "@system-service",
    "RestrictSUIDSGID": "yes",
}


def parse(path: Path) -> dict[str, list[tuple[str, str]]]:
    """Sections -> (key, value) in order; repeated keys kept, backslash continuations joined."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current = ""
    pending = ""
    for raw in path.read_text().splitlines():
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            current = line.strip("[]")
            sections[current] = []
            continue
        key, _, value = line.partition("=")
        sections[current].append((key.strip(), value.strip()))
    return sections


def values(unit: dict[str, list[tuple[str, str]]], section: str, key: str) -> list[str]:
    return [value for found, value in unit.get(section, []) if found == key]


def one(unit: dict[str, list[tuple[str, str]]], section: str, key: str) -> str:
    (value,) = values(unit, section, key)
    return value


def units() -> dict[str, dict[str, list[tuple[str, str]]]]:
    return {path.name: parse(path) for path in sorted(UNITS.glob("*.service"))}


def long_running() -> dict[str, dict[str, list[tuple[str, str]]]]:
    return {name: unit for name, unit in units().items() if values(unit, "Service", "Type") != ["oneshot"]}


def exec_start(unit: dict[str, list[tuple[str, str]]]) -> list[str]:
    return shlex.split(one(unit, "Service", "ExecStart").replace("%%", "%"))


def test_the_units_are_the_ones_the_documentation_shows():
    docs = (ROOT / "docs" / "operations.md").read_text()
    section = docs.split("## Running under systemd", 1)[1].split("\n## ", 1)[0]

    shipped = sorted(UNITS.iterdir())

    assert {path.name for path in shipped} == {
        "kassa.target",
        "kassa-metrics-dir.service",
        "kassa-web.service",
        "kassa-worker.service",
        "kassa-webhooks.service",
        "kassa-beat.service",
        "kassa-signer.service",
    }
    for path in shipped:
        assert f"```ini\n{path.read_text()}```" in section, f"docs/operations.md shows another {path.name}"


@pytest.mark.parametrize("name", sorted(long_running()))
def test_every_long_running_service_is_hardened_and_restarts(name):
    unit = long_running()[name]

    for key, expected in HARDENING.items():
        assert values(unit, "Service", key) == [expected], f"{name}: {key}"
    assert one(unit, "Service", "User") in {"kassa", "kassa-signer"}
    assert values(unit, "Service", "Restart") == ["on-failure"]
    assert values(unit, "Service", "EnvironmentFile")[0] == "/etc/kassa/kassa.env"
    assert values(unit, "Service", "ReadWritePaths")
    assert exec_start(unit)[0].startswith(f"{CHECKOUT}/.venv/bin/")


@pytest.mark.parametrize(
    "name", ["kassa-web.service", "kassa-worker.service", "kassa-webhooks.service", "kassa-beat.service"]
)
def test_the_kassa_processes_share_an_emptied_metrics_directory(name):
    unit = units()[name]
    prepare = units()["kassa-metrics-dir.service"]

    assert f"PROMETHEUS_MULTIPROC_DIR={METRICS_DIR}" in values(unit, "Service", "Environment")
    assert METRICS_DIR in one(unit, "Service", "ReadWritePaths").split()
    assert "kassa-metrics-dir.service" in one(unit, "Unit", "Requires").split()
    assert "kassa-metrics-dir.service" in one(unit, "Unit", "After").split()
    assert values(prepare, "Service", "ExecStart") == [
        f"/bin/rm -rf {METRICS_DIR}",
        f"/usr/bin/install -d -o kassa -g kassa -m 0750 {METRICS_DIR}",
    ]
    assert "/var/lib/kassa" in one(unit, "Service", "ReadWritePaths").split()  # KASSA_VAR_DIR
    assert "KASSA_VAR_DIR=/var/lib/kassa" in values(unit, "Service", "Environment")


def test_the_web_unit_runs_gunicorn_on_loopback_with_real_modules_and_flags():
    from gunicorn.config import Config
    from gunicorn.glogging import Logger

    args = exec_start(units()["kassa-web.service"])

    assert args[0] == f"{CHECKOUT}/.venv/bin/gunicorn"
    parsed = Config().parser().parse_args(args[1:])  # an unknown flag exits here
    assert parsed.config == "python:config.gunicorn"
    assert importlib.util.find_spec("config.gunicorn") is not None
    assert parsed.args == ["config.wsgi"] and importlib.util.find_spec("config.wsgi") is not None
    assert parsed.bind == ["127.0.0.1:8000"]
    assert parsed.workers and parsed.workers >= 1
    assert parsed.accesslog is None  # Django writes the access line (core/request_id.py)
    assert issubclass(import_string(parsed.logger_class), Logger)


def test_the_workers_consume_every_queue_in_two_groups_and_beat_runs_once():
    from celery.bin.beat import beat
    from celery.bin.worker import worker

    worker_flags = {opt for param in worker.params for opt in param.opts}
    beat_flags = {opt for param in beat.params for opt in param.opts}
    groups = []
    beats = []
    for name, unit in long_running().items():
        args = exec_start(unit)
        if not args[0].endswith("/celery"):
            continue
        assert args[1:3] == ["-A", "config"]
        assert importlib.util.find_spec("config.celery") is not None
        command, flags = args[3], [arg for arg in args[4:] if arg.startswith("-")]
        assert set(flags) <= (worker_flags if command == "worker" else beat_flags), name
        if command == "worker":
            assert not {"-B", "--beat"} & set(flags), f"{name}: beat runs in its own unit"
            groups.append(args[args.index("--queues") + 1].split(","))
            assert args[args.index("--hostname") + 1].endswith("@%h")
        else:
            assert command == "beat"
            beats.append(name)

    assert beats == ["kassa-beat.service"]
    assert sorted(groups) == [["payouts", "chain", "housekeeping"], ["webhooks"]]
    assert sorted(queue for group in groups for queue in group) == sorted(settings.CELERY_TASK_QUEUE_NAMES)


def test_the_signer_unit_runs_the_real_command_with_its_socket_in_its_runtime_directory():
    from django.core.management import load_command_class

    unit = units()["kassa-signer.service"]
    args = exec_start(unit)

    assert args[:3] == [f"{CHECKOUT}/.venv/bin/python", f"{CHECKOUT}/manage.py", "run_signer"]
    parser = load_command_class("chains", "run_signer").create_parser("manage.py", "run_signer")
    options = parser.parse_args(args[3:])
    assert options.socket == "/run/kassa/signer.sock"
    assert one(unit, "Service", "RuntimeDirectory") == "kassa"
    assert one(unit, "Service", "User") == "kassa-signer"
    assert "PROMETHEUS_MULTIPROC_DIR" not in " ".join(values(unit, "Service", "Environment"))


def test_systemd_accepts_the_units(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:  # not a skip: the checks above hold on every machine; this one adds systemd's own
        return
    for path in UNITS.iterdir():
        (tmp_path / path.name).write_text(path.read_text().replace(CHECKOUT, str(ROOT)))

    result = subprocess.run(
        [analyze, "verify", "--man=no", *sorted(str(path) for path in tmp_path.iterdir())],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == ""  # an unknown key or system-call group is only a warning


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(port: int, request_id: str, *, timeout: float) -> tuple[int, str]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/readyz", headers={"Host": "pay.example.com", "X-Request-ID": request_id}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.status, response.headers["X-Request-ID"]


def _ready(port: int, request_id: str) -> bool:
    try:
        return _get(port, request_id, timeout=5)[0] == 200
    except OSError:
        return False


def test_gunicorn_with_the_web_units_flags_writes_json_lines_with_the_request_id(tmp_path):
    port = _free_port()
    args = exec_start(units()["kassa-web.service"])
    args = [str(Path(sys.executable).parent / "gunicorn"), *args[1:]]
    args[args.index("--bind") + 1] = f"127.0.0.1:{port}"
    args[args.index("--workers") + 1] = "1"
    env = production_env(tmp_path, PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "metrics"))
    log = tmp_path / "gunicorn.log"
    with open(log, "wb") as out:
        web = subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            # Wait until the worker answers, each attempt with an id of its own: on a loaded machine an
            # attempt may time out here and still be served (and logged) once the worker has booted.
            attempts = itertools.count()
            wait_for(lambda: web.poll() is not None or _ready(port, f"boot-{next(attempts)}"), 120)
            answer = _get(port, "lb-probe-1", timeout=120) if web.poll() is None else None  # one probe
        finally:
            web.terminate()
            web.wait(30)

    text = log.read_text()
    assert answer == (200, "lb-probe-1"), text
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]  # every line is JSON
    access = [line for line in lines if line["logger"] == "kassa.access"]
    probes = [(line["route"], line["status"]) for line in access if line["request_id"] == "lb-probe-1"]
    assert probes == [("/readyz", 200)]  # one line for the one probe
    assert {line["request_id"].split("-")[0] for line in access} == {"boot", "lb"}
    assert any(line["logger"] == "gunicorn.error" and "Booting worker" in line["message"] for line in lines)

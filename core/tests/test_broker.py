"""The embedded broker's queue folder, shared by web, worker and beat: a reader never takes a message that is
still being written (kombu's own transport let a worker read an empty file and die, issue #1551), and a
file that is no message is skipped, never stopping the worker."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from queue import Empty

import pytest
from kombu import Connection
from kombu.transport import resolve_transport

from core.broker import PARTIAL, Transport


@pytest.fixture
def channel(tmp_path: Path):
    folder = tmp_path / "queue"
    folder.mkdir()
    options = {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "control_folder": str(tmp_path / "control"),
        "store_processed": False,
    }
    with Connection("filesystem://", transport=Transport, transport_options=options) as connection:
        yield connection.default_channel


def test_a_message_is_read_whole_and_one_being_written_is_not_read(channel, monkeypatch):
    folder = Path(channel.data_folder_in)
    seen = []
    rename = os.replace

    def replace(source: str, target: str) -> None:  # what a reader could find just before the rename
        seen.append((os.listdir(folder), Path(source).read_bytes()))
        rename(source, target)

    monkeypatch.setattr("core.broker.os.replace", replace)
    channel._put("celery", {"task": "first"})
    [written] = os.listdir(folder)
    [(listing, content)] = seen
    assert [name.removesuffix(PARTIAL) for name in listing] == [written] and listing[0].endswith(PARTIAL)
    assert json.loads(content) == {"task": "first"}  # whole before its name is one a reader takes
    (folder / f"0_in-flight.celery.msg{PARTIAL}").write_bytes(b"")  # another process, mid-write

    assert written.endswith(".celery.msg")  # renamed into place once whole
    assert channel._get("celery") == {"task": "first"}
    with pytest.raises(Empty):
        channel._get("celery")  # the half-written one waits for its rename


def test_a_file_that_is_no_message_is_skipped_and_the_next_one_delivered(channel, caplog):
    folder = Path(channel.data_folder_in)
    (folder / "0_broken.celery.msg").write_bytes(b"")  # what kombu's own writer could leave for a reader
    channel._put("celery", {"task": "next"})

    with caplog.at_level(logging.ERROR, logger="core.broker"):
        message = channel._get("celery")

    assert message == {"task": "next"}
    assert "was no message and is dropped" in caplog.text
    with pytest.raises(Empty):
        channel._get("celery")


def test_every_filesystem_broker_url_of_kassa_is_this_transport():
    import config.celery  # noqa: F401  (every process imports it: it installs the transport)

    assert resolve_transport("filesystem") is Transport

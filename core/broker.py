"""The embedded broker (kombu's filesystem transport, `make run` and the SQLite default), safe for several
processes sharing one queue folder.

kombu creates a message's file and only then writes it. A worker listing the folder in between moves the
still empty file away, reads nothing, and dies on the JSON ("Expecting value", kombu issue #1551), which
ends `make run`; the message is lost too. Here a message is written whole under a name no reader takes
(`….msg.part`) and renamed into place, which is atomic within a folder: a reader sees the whole message
or none. A file that still cannot be read as a message (a disk error, a hand edit) is logged and skipped,
so it never stops the worker.

`install()` (config/celery.py, in every process) makes this the transport of every `filesystem://` broker
URL, so the settings keep kombu's own URL and a test or tool that names another broker gets that one.
"""

from __future__ import annotations

import logging
import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.utils.json import dumps

logger = logging.getLogger(__name__)

PARTIAL = ".part"  # a message being written: its name ends past `<queue>.msg`, so no reader matches it


class Channel(filesystem.Channel):
    # kombu's filesystem channel names the second parameter `payload`, its base channel `message`.
    def _put(self, queue: Any, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = final + PARTIAL
        try:
            with open(partial, "wb") as file:
                file.write(dumps(payload).encode())
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _get(self, queue: Any, timeout: Any = None) -> Any:
        while True:  # kombu's read, past any file that is no message (Empty ends it)
            try:
                return super()._get(queue)
            except ValueError as exc:
                logger.error("broker: a file of queue %s was no message and is dropped: %s", queue, exc)


class Transport(filesystem.Transport):
    Channel = Channel


def install() -> None:
    """`filesystem://` means this transport from now on, in this process."""
    TRANSPORT_ALIASES["filesystem"] = f"{__name__}:Transport"

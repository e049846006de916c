"""A small SMTP server for tests, on 127.0.0.1 and a free port (aiosmtpd is not installed here): enough of
RFC 5321 for smtplib (EHLO/HELO, MAIL, RCPT, DATA, RSET, NOOP, QUIT). Received messages are parsed with
the standard library; `refusing` answers 421 to every connection until turned off (a mail server down)."""

from __future__ import annotations

import socketserver
import threading
from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Any


class _Handler(socketserver.StreamRequestHandler):
    server: SmtpServer

    def _say(self, line: str) -> None:
        self.wfile.write(f"{line}\r\n".encode())
        self.wfile.flush()

    def handle(self) -> None:
        if self.server.refusing:
            self.server.refused += 1
            self._say("421 4.3.2 service not available, try later")
            return
        self._say("220 kassa-test ESMTP")
        recipients: list[str] = []
        while line := self.rfile.readline():
            verb = line.decode(errors="replace").strip().split(" ", 1)[0].upper()
            if verb in ("EHLO", "HELO"):
                self._say("250 kassa-test")
            elif verb == "MAIL":
                recipients = []
                self._say("250 OK")
            elif verb == "RCPT":
                recipients.append(line.decode().split(":", 1)[1].strip().strip("<>"))
                self._say("250 OK")
            elif verb == "DATA":
                self._say("354 end with <CRLF>.<CRLF>")
                self.server.deliver(self._data(), recipients)
                self._say("250 OK queued")
            elif verb in ("RSET", "NOOP"):
                self._say("250 OK")
            elif verb == "QUIT":
                self._say("221 bye")
                return
            else:
                self._say("502 not implemented")

    def _data(self) -> bytes:
        lines = []
        while (line := self.rfile.readline()) not in (b".\r\n", b".\n", b""):
            lines.append(line[1:] if line.startswith(b"..") else line)  # dot-stuffing
        return b"".join(lines)


class SmtpServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.refusing = False
        self.refused = 0
        self.messages: list[EmailMessage] = []
        self._arrived = threading.Condition()
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def deliver(self, data: bytes, recipients: list[str]) -> None:
        message: Any = message_from_bytes(data, policy=policy.default)
        message["X-Test-Recipients"] = ", ".join(recipients)
        with self._arrived:
            self.messages.append(message)
            self._arrived.notify_all()

    def wait_for(self, count: int, timeout: float = 5.0) -> list[EmailMessage]:
        """The messages once `count` arrived (an event, not a clock); fails after `timeout` seconds."""
        with self._arrived:
            assert self._arrived.wait_for(lambda: len(self.messages) >= count, timeout), self.messages
            return list(self.messages)

    def start(self) -> SmtpServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

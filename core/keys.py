"""Development keys kept under var/, and the encryption of secrets at rest.

Imported by settings, so this module must not touch Django settings at import time.
"""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path
from typing import Literal


def development_key(path: Path, kind: Literal["django", "fernet"]) -> str:
    """Return the key stored at `path`, creating it once (0600) so restarts keep sessions and secrets."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    key = base64.urlsafe_b64encode(os.urandom(32)).decode() if kind == "fernet" else secrets.token_urlsafe(50)
    # O_EXCL: when two processes start together, one writes and the other reads the winner's key.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as handle:
        handle.write(key + "\n")
    return key


def _fernet():  # type: ignore[no-untyped-def]
    from cryptography.fernet import Fernet, MultiFernet
    from django.conf import settings

    # Several comma-separated keys allow rotation: the first encrypts, all decrypt.
    keys = [key.strip() for key in settings.FIELD_ENCRYPTION_KEY.split(",") if key.strip()]
    return MultiFernet([Fernet(key) for key in keys])


def encrypt(plaintext: str) -> str:
    return _fernet().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    return _fernet().decrypt(token.encode()).decode()

"""Webhook signatures: the documented `signature` header and the Standard Webhooks headers (DECISIONS.md §7).

Receivers use `verify` (or the README's snippets); the delivery code uses `signed_headers`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping

from payments.services import SECRET_PREFIX


def signature(secret: str, body: bytes) -> str:
    """API.md §5: lowercase hex HMAC-SHA512 of the exact body, keyed with the whitespace-trimmed secret."""
    return hmac.new(secret.strip().encode(), body, hashlib.sha512).hexdigest()


def _standard_key(secret: str) -> bytes:
    # Standard Webhooks keys are "whsec_" + base64(key bytes); any other secret is used as its UTF-8 bytes.
    secret = secret.strip()
    if secret.startswith(SECRET_PREFIX):
        try:
            return base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
        except binascii.Error:
            pass
    return secret.encode()


def standard_signature(secret: str, webhook_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    digest = hmac.new(_standard_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signed_headers(secret: str, webhook_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "signature": signature(secret, body),
        "webhook-id": webhook_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": standard_signature(secret, webhook_id, timestamp, body),
    }


def verify(secret: str, body: bytes, headers: Mapping[str, str]) -> bool:
    """True when the `signature` header matches; when Standard Webhooks headers exist they must match too."""
    lowered = {key.lower(): value for key, value in headers.items()}
    if not hmac.compare_digest(lowered.get("signature", ""), signature(secret, body)):
        return False
    if "webhook-signature" in lowered:
        try:
            timestamp = int(lowered.get("webhook-timestamp", ""))
        except ValueError:
            return False
        expected = standard_signature(secret, lowered.get("webhook-id", ""), timestamp, body)
        offered = lowered["webhook-signature"].split()
        return any(hmac.compare_digest(candidate, expected) for candidate in offered)
    return True

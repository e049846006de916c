"""Webhook signatures: the documented `signature` header and the Standard Webhooks headers.

Receivers use `verify` (or the snippets of docs/api.md); the delivery code uses `signed_headers`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Mapping, Sequence

from payments.services import SECRET_PREFIX


def signature(secret: str, body: bytes) -> str:
    """docs/api.md: lowercase hex HMAC-SHA512 of the exact body, keyed with the whitespace-trimmed secret."""
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


# During a rotation's overlap: the new secret's `signature` value, beside the old one's in `signature`.
NEXT_SIGNATURE_HEADER = "signature-next"


def signed_headers(
    secret: str, webhook_id: str, timestamp: int, body: bytes, *, previous: str | None = None
) -> dict[str, str]:
    """Signed with `secret`; during a rotation's overlap (`previous`, the secret before it) by both, so a
    receiver holding either keeps verifying: two `v1,` signatures in `webhook-signature`, and `signature`
    still made with the previous secret, the one receivers hold, the new secret's value travelling beside it
    in `signature-next`. Once the overlap ends `signature` is the new secret's (docs/api.md, Rotating)."""
    headers = {
        "signature": signature(secret if previous is None else previous, body),
        "webhook-id": webhook_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": standard_signature(secret, webhook_id, timestamp, body),
    }
    if previous is not None:
        headers["webhook-signature"] += " " + standard_signature(previous, webhook_id, timestamp, body)
        headers[NEXT_SIGNATURE_HEADER] = signature(secret, body)
    return headers


# How far `webhook-timestamp` may be from the receiver's clock, either way, before a request counts as a
# replay (the Standard Webhooks recommendation).
DEFAULT_TOLERANCE_SECONDS = 300


def verify(
    secret: str | Sequence[str],
    body: bytes,
    headers: Mapping[str, str],
    *,
    tolerance: int = DEFAULT_TOLERANCE_SECONDS,
    now: float | None = None,
) -> bool:
    """Standard Webhooks verification, the recommended way; `secret` may list several (during a rotation).

    All three `webhook-*` headers are required (a request stripped of them fails), the timestamp must be
    within `tolerance` seconds of now (an old request replayed fails), and one of the space-separated `v1,`
    signatures must match one of the secrets. The documented `signature` header covers the body only, so
    it cannot stop a replay: when present it (or, during a rotation, `signature-next`) must match as well,
    never instead.
    """
    secrets = [secret] if isinstance(secret, str) else list(secret)
    lowered = {key.lower(): value for key, value in headers.items()}
    webhook_id = lowered.get("webhook-id", "")
    offered = lowered.get("webhook-signature", "").split()
    try:
        timestamp = int(lowered.get("webhook-timestamp", ""))
    except ValueError:
        return False
    if not webhook_id or not offered or not secrets:
        return False
    if abs((time.time() if now is None else now) - timestamp) > tolerance:
        return False
    expected = [standard_signature(key, webhook_id, timestamp, body) for key in secrets]
    if not any(hmac.compare_digest(given, want) for given in offered for want in expected):
        return False
    if "signature" in lowered:
        # During a rotation `signature` is the old secret's and `signature-next` the new one's: a receiver
        # already holding only the new secret matches the second.
        sent = [lowered[name] for name in ("signature", NEXT_SIGNATURE_HEADER) if name in lowered]
        return any(hmac.compare_digest(given, signature(key, body)) for given in sent for key in secrets)
    return True

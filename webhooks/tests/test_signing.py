import base64
import hashlib
import hmac

from webhooks.signing import signature, signed_headers, standard_signature, verify

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
BODY = b'{"invoiceId":"a","status":"done","message":"Invoice paid"}'


def test_signature_is_hex_hmac_sha512_with_trimmed_secret():
    expected = hmac.new(SECRET.encode(), BODY, hashlib.sha512).hexdigest()

    assert signature("  " + SECRET + "\n", BODY) == expected
    assert len(expected) == 128
    assert expected == expected.lower()


def test_standard_webhooks_signature_uses_the_base64_key():
    key = base64.b64decode(SECRET.removeprefix("whsec_"))
    expected = base64.b64encode(hmac.new(key, b"msg_1.1700000000." + BODY, hashlib.sha256).digest()).decode()

    assert standard_signature(SECRET, "msg_1", 1700000000, BODY) == "v1," + expected


def test_a_secret_without_the_prefix_is_used_as_raw_bytes():
    expected = base64.b64encode(hmac.new(b"plain-secret", b"id.1.x", hashlib.sha256).digest()).decode()

    assert standard_signature("plain-secret", "id", 1, b"x") == "v1," + expected


def test_verify_accepts_ours_and_refuses_tampering():
    headers = signed_headers(SECRET, "evt", 1700000000, BODY)

    assert verify(SECRET, BODY, headers)
    assert not verify(SECRET, BODY + b" ", headers)
    assert not verify("whsec_other", BODY, headers)
    assert not verify(SECRET, BODY, {**headers, "webhook-signature": "v1,AAAA"})
    assert verify(SECRET, BODY, {"Signature": signature(SECRET, BODY)})

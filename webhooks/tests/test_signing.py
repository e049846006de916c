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


def test_standard_webhooks_published_test_vector():
    # The example of the Standard Webhooks specification and its reference libraries.
    signed = standard_signature(
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1614265330,
        b'{"test": 2432232314}',
    )

    assert signed == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


NOW = 1700000000


def test_verify_accepts_ours_and_refuses_tampering():
    headers = signed_headers(SECRET, "evt", NOW, BODY)

    assert verify(SECRET, BODY, headers, now=NOW)
    assert not verify(SECRET, BODY + b" ", headers, now=NOW)
    assert not verify("whsec_other", BODY, headers, now=NOW)
    assert not verify(SECRET, BODY, {**headers, "webhook-signature": "v1,AAAA"}, now=NOW)
    assert not verify(SECRET, BODY, {**headers, "signature": "0" * 128}, now=NOW)


def test_verifier_rejects_stale_timestamp():
    headers = signed_headers(SECRET, "evt", NOW, BODY)

    assert verify(SECRET, BODY, headers, now=NOW + 300)
    assert not verify(SECRET, BODY, headers, now=NOW + 301)  # replayed six minutes later
    assert not verify(SECRET, BODY, headers, now=NOW - 301)  # from the future
    assert verify(SECRET, BODY, headers, now=NOW + 3600, tolerance=3600)


def test_verifier_rejects_missing_standard_headers():
    headers = signed_headers(SECRET, "evt", NOW, BODY)

    for stripped in ("webhook-id", "webhook-timestamp", "webhook-signature"):
        assert not verify(SECRET, BODY, {k: v for k, v in headers.items() if k != stripped}, now=NOW)
    assert not verify(SECRET, BODY, {"Signature": signature(SECRET, BODY)}, now=NOW)


def test_verifier_accepts_any_of_several_signatures_and_secrets():
    old, new = SECRET, "whsec_" + base64.b64encode(b"another key of thirty-two bytes!").decode()
    headers = signed_headers(new, "evt", NOW, BODY)
    both = {**headers, "webhook-signature": headers["webhook-signature"] + " v1,AAAA"}

    assert verify([old, new], BODY, both, now=NOW)
    assert not verify(old, BODY, both, now=NOW)


def test_during_an_overlap_signature_keeps_the_old_secret_and_signature_next_carries_the_new():
    old, new = SECRET, "whsec_" + base64.b64encode(b"another key of thirty-two bytes!").decode()

    headers = signed_headers(new, "evt", NOW, BODY, previous=old)

    assert headers["signature"] == signature(old, BODY)
    assert headers["signature-next"] == signature(new, BODY)
    assert verify(old, BODY, headers, now=NOW) and verify(new, BODY, headers, now=NOW)
    assert not verify(new, BODY, {**headers, "signature-next": "0" * 128}, now=NOW)
    assert "signature-next" not in signed_headers(new, "evt", NOW, BODY)

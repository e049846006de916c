"""PUT /api/company/settings/webhook-url (docs/api.md, docs/decisions.md)."""

import json

import pytest

from payments.models import Company

URL = "/api/company/settings/webhook-url"


def _put(api, body):
    return api.generic("PUT", URL, json.dumps(body), content_type="application/json")


def _stored(merchant):
    return Company.objects.get(pk=merchant.company.pk).webhook_url


def test_sets_the_url_and_echoes_the_body(api, merchant):
    response = _put(api, {"webHookUrl": "https://93.184.215.14:8443/kassa/hook?x=1"})

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"webHookUrl": "https://93.184.215.14:8443/kassa/hook?x=1"}
    assert _stored(merchant) == "https://93.184.215.14:8443/kassa/hook?x=1"


@pytest.mark.parametrize("empty", [None, ""])
def test_null_or_empty_clears(api, merchant, empty):
    _put(api, {"webHookUrl": "https://93.184.215.14/hook"})

    response = _put(api, {"webHookUrl": empty})

    assert response.status_code == 200
    assert response.json() == {"webHookUrl": empty}
    assert _stored(merchant) == ""


def test_hostname_is_resolved_and_public_names_accepted(api, merchant, monkeypatch):
    import socket

    from core import ssrf

    queried = []

    def fake(host, port, *args, **kwargs):
        queried.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", port or 443))]

    monkeypatch.setattr(ssrf, "_getaddrinfo", fake)

    response = _put(api, {"webHookUrl": "https://hooks.shop.example/kassa"})

    assert response.status_code == 200
    assert _stored(merchant) == "https://hooks.shop.example/kassa"
    assert queried == ["hooks.shop.example"]  # one DNS query per request, not one per check


def test_hostname_resolving_to_private_address_is_refused(api, merchant, monkeypatch):
    import socket

    from core import ssrf

    monkeypatch.setattr(
        ssrf,
        "_getaddrinfo",
        lambda host, port, *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.1.2.3", 443))],
    )

    response = _put(api, {"webHookUrl": "https://rebind.example/kassa"})

    assert response.status_code == 400
    assert _stored(merchant) == ""


@pytest.mark.parametrize(
    "url",
    [
        "ftp://93.184.215.14/hook",
        "javascript:alert(1)",
        "file:///etc/passwd",
        "93.184.215.14/hook",
        "/relative/hook",
        "https://",
        "http://127.0.0.1:8000/hook",
        "http://localhost/hook",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://10.0.0.1/hook",
        "http://172.16.5.4/hook",
        "http://192.168.1.1/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[fd00::1]/hook",
        "http://[fe80::1]/hook",
        "http://0.0.0.0/hook",
        "http://2130706433/hook",
        "http://0x7f000001/hook",
        "http://0x7f.0.0.1/hook",
        "http://0177.0.0.1/hook",
        "http://127.1/hook",
        "https://93.184.215.14/" + "a" * 2100,
    ],
)
def test_unsafe_or_invalid_urls_are_400_and_change_nothing(api, merchant, url):
    _put(api, {"webHookUrl": "https://93.184.215.14/before"})

    response = _put(api, {"webHookUrl": url})

    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "validation_error"
    assert body["errors"][0]["field"] == "webHookUrl"
    assert _stored(merchant) == "https://93.184.215.14/before"


def test_private_hosts_allowed_when_the_deployment_says_so(api, merchant, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True

    ok = _put(api, {"webHookUrl": "http://127.0.0.1:9000/hook"})
    still_bad = _put(api, {"webHookUrl": "ftp://127.0.0.1/hook"})

    assert ok.status_code == 200
    assert _stored(merchant) == "http://127.0.0.1:9000/hook"
    assert still_bad.status_code == 400


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "webHookUrl"),
        ({"webHookUrl": 42}, "webHookUrl"),
        ({"webHookUrl": ["https://93.184.215.14/"]}, "webHookUrl"),
        ({"webHookUrl": True}, "webHookUrl"),
    ],
)
def test_missing_or_mistyped_field_is_400(api, body, field):
    response = _put(api, body)

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == field


@pytest.mark.parametrize("raw", ["[]", '"https://93.184.215.14/"', "null", "3"])
def test_non_object_body_is_400(api, raw):
    response = api.generic("PUT", URL, raw, content_type="application/json")

    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"


def test_get_is_405(api):
    response = api.get(URL)

    assert response.status_code == 405
    assert response.json()["code"] == "method_not_allowed"


def test_form_body_is_415(api):
    response = api.generic(
        "PUT", URL, "webHookUrl=https://93.184.215.14/", content_type="application/x-www-form-urlencoded"
    )

    assert response.status_code == 415


def test_only_the_callers_company_changes(api, merchant, other_merchant):
    _put(api, {"webHookUrl": "https://93.184.215.14/mine"})

    assert _stored(merchant) == "https://93.184.215.14/mine"
    assert _stored(other_merchant) == ""

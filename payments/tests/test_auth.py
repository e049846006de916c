import json

import pytest
import requests

from payments.services import company_rotate_token

URL = "/api/company/settings/webhook-url"
BODY = json.dumps({"webHookUrl": "https://93.184.215.14/hook"})


def _put(client, **headers):
    return client.generic("PUT", URL, BODY, content_type="application/json", headers=headers)


def _assert_unauthorized(response):
    assert response.status_code == 401
    assert response["Content-Type"] == "application/problem+json"
    assert response["WWW-Authenticate"].startswith("Bearer")
    body = response.json()
    assert body["code"] == "unauthorized"
    assert body["status"] == 401
    assert body["title"] == "Unauthorized"


def test_missing_header_is_401_problem_with_www_authenticate(client, merchant):
    response = _put(client)

    _assert_unauthorized(response)


@pytest.mark.parametrize(
    "value",
    [
        "Bearer",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "Token {token}",
        "{token}",
        "Bearer {token} extra",
    ],
)
def test_malformed_header_is_401(client, merchant, value):
    response = _put(client, Authorization=value.format(token=merchant.public_token))

    _assert_unauthorized(response)


def test_unknown_token_is_401(client, merchant):
    response = _put(client, Authorization="Bearer kassa_pk_not-a-real-token")

    _assert_unauthorized(response)


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
def test_scheme_is_case_insensitive(client, merchant, scheme):
    response = _put(client, Authorization=f"{scheme} {merchant.public_token}")

    assert response.status_code == 200


def test_rotated_token_replaces_the_old_one(client, merchant):
    new_token = company_rotate_token(company_id=merchant.company.pk)

    old = _put(client, Authorization=f"Bearer {merchant.public_token}")
    new = _put(client, Authorization=f"Bearer {new_token}")

    _assert_unauthorized(old)
    assert new.status_code == 200


def test_token_is_stored_only_as_hash(merchant):
    merchant.company.refresh_from_db()

    stored = [str(value) for value in merchant.company.__dict__.values()]

    assert merchant.public_token not in stored
    assert merchant.company.token_prefix == merchant.public_token[:13]


@pytest.mark.django_db(transaction=True)
def test_lowercase_header_name_over_real_http(live_server):
    from tests.factories import MerchantFactory

    created = MerchantFactory(name="Live", email="live@acme.test")
    url = live_server.url + URL

    # requests sends header names exactly as given: this is a lowercase `authorization:` on the wire.
    ok = requests.put(
        url,
        data=BODY,
        headers={"authorization": f"bearer {created.public_token}", "content-type": "application/json"},
        timeout=10,
    )
    missing = requests.put(url, data=BODY, headers={"content-type": "application/json"}, timeout=10)

    assert ok.status_code == 200
    assert ok.json() == {"webHookUrl": "https://93.184.215.14/hook"}
    assert missing.status_code == 401
    assert missing.headers["WWW-Authenticate"].startswith("Bearer")

import json
import re

import pytest
import yaml
from jsonschema import Draft4Validator, ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def test_schema_is_openapi_3_and_documents_the_endpoints(client):
    response = client.get("/api/schema/")

    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    assert schema["openapi"].startswith("3.")
    assert "put" in schema["paths"]["/api/company/settings/webhook-url"]
    assert (
        "bearerAuth" in str(schema["components"]["securitySchemes"])
        or schema["components"]["securitySchemes"]
    )


def test_docs_page_loads_its_assets_locally_not_from_a_cdn(client):
    response = client.get("/api/docs/")

    html = response.content.decode()
    assert response.status_code == 200
    external = re.findall(r"""(?:src|href)=["'](https?://[^"']+)""", html)
    assert external == []
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html


def test_docs_static_asset_is_served(client, settings):
    response = client.get("/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")

    assert response.status_code == 200


# --- negotiation ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "accept", "kind"),
    [
        ("", "", "yaml"),
        ("?format=yaml", "", "yaml"),
        ("", "application/yaml", "yaml"),
        ("?format=json", "", "json"),
        ("", "application/json", "json"),
        ("", "text/html,application/xhtml+xml,*/*;q=0.8", "yaml"),  # a browser
        ("", "application/vnd.oai.openapi+json", "json"),
        ("", "application/vnd.oai.openapi", "yaml"),
        ("?format=json", "application/yaml", "json"),  # the query parameter wins
    ],
)
def test_the_schema_comes_as_yaml_or_json(client, query, accept, kind):
    headers = {"HTTP_ACCEPT": accept} if accept else {}
    response = client.get(f"/api/schema/{query}", **headers)

    assert response.status_code == 200
    if kind == "json":
        assert "json" in response["Content-Type"]
        assert json.loads(response.content)["openapi"].startswith("3.")
    else:
        assert "json" not in response["Content-Type"]
        assert yaml.safe_load(response.content)["openapi"].startswith("3.")


@pytest.mark.parametrize(
    ("method", "query", "accept", "status"),
    [
        ("post", "", "", 405),
        ("get", "?format=xml", "", 404),
        ("get", "", "text/csv", 406),
    ],
)
def test_the_schema_views_errors_are_problem_json(client, method, query, accept, status):
    headers = {"HTTP_ACCEPT": accept} if accept else {}
    response = getattr(client, method)(f"/api/schema/{query}", **headers)

    assert response.status_code == status
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["status"] == status


# --- declared bodies match the real ones ------------------------------------------------------------------


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    from django.test import Client

    with django_db_blocker.unblock():
        return json.loads(Client(HTTP_HOST="127.0.0.1").get("/api/schema/?format=json").content)


def _check(schema, path: str, method: str, status: int, body, media="application/json") -> None:  # type: ignore[no-untyped-def]
    """`body` validates against the declared response of that operation (refs resolved in the document)."""
    declared = schema["paths"][path][method]["responses"][str(status)]["content"][media]["schema"]
    component = declared["items"] if declared.get("type") == "array" else declared
    assert "$ref" in component, f"inline response schema, expected a component: {declared}"
    Draft4Validator(_absolute(declared), registry=_registry(schema)).validate(body)


def _absolute(node):  # type: ignore[no-untyped-def]
    """The document's local `$ref`s pointed at the registered document."""
    if isinstance(node, dict):
        return {
            key: "urn:kassa" + value if key == "$ref" else _absolute(value) for key, value in node.items()
        }
    return [_absolute(item) for item in node] if isinstance(node, list) else node


def _answer(schema, response, path: str, method: str) -> None:  # type: ignore[no-untyped-def]
    """A real response, success or error, is one the operation declares, with the declared body."""
    assert str(response.status_code) in schema["paths"][path][method]["responses"], response.content
    media = response["Content-Type"].split(";")[0]
    _check(schema, path, method, response.status_code, response.json(), media)


def _nullable(node):  # type: ignore[no-untyped-def]
    """OpenAPI 3.0 `nullable: true` as JSON Schema: the type may also be null. And, for these tests only,
    an object has no keys beyond its declared properties: a key the API adds must be declared too."""
    if isinstance(node, dict):
        node = {key: _nullable(value) for key, value in node.items()}
        if isinstance(node.get("properties"), dict) and node.get("type") == "object":
            node.setdefault("additionalProperties", False)
        if node.pop("nullable", False):
            if "type" in node:
                node["type"] = [node["type"], "null"]
            elif "enum" in node:
                node["enum"] = [*node["enum"], None]
            else:
                node = {"anyOf": [node, {"type": "null"}]}
        if "allOf" in node and len(node["allOf"]) == 1 and "type" in node and isinstance(node["type"], list):
            node = {"anyOf": [node["allOf"][0], {"type": "null"}]}
        return node
    if isinstance(node, list):
        return [_nullable(item) for item in node]
    return node


def _registry(schema):  # type: ignore[no-untyped-def]
    document = Resource.from_contents(_nullable(schema), default_specification=DRAFT4)
    return Registry().with_resource("urn:kassa", document)


@pytest.fixture
def paid_invoice(api, anon):  # type: ignore[no-untyped-def]
    created = api.post(
        "/api/invoices/v1/regular",
        {"invoiceCurrency": "usd", "items": [{"name": "Tea", "price": "10"}], "redirectURL": None},
        format="json",
    )
    invoice_id = created.json()["id"]
    filled = anon.post(
        f"/api/invoices/v1/regular/{invoice_id}/proceed",
        {"clientEmail": "client@example.com", "paymentCurrency": "btc"},
        format="json",
    )
    address = filled.json()["address"]
    api.post(
        "/api/sandbox/deposits",
        {"address": address["address"], "asset": "btc", "amount": filled.json()["paymentDetails"]["amount"]},
        format="json",
    )
    return created, filled, invoice_id


def test_invoice_responses_are_as_declared(schema, api, anon, paid_invoice):
    created, filled, invoice_id = paid_invoice
    _check(schema, "/api/invoices/v1/regular", "post", 201, created.json())
    _check(schema, "/api/invoices/v1/regular/{invoice_id}/proceed", "post", 200, filled.json())
    read = anon.get(f"/api/invoices/v1/regular/{invoice_id}").json()
    assert read["invoiceTransactions"]  # the paid invoice lists its transaction
    _check(schema, "/api/invoices/v1/regular/{invoice_id}", "get", 200, read)
    _check(schema, "/api/invoices/v1/regular", "get", 200, api.get("/api/invoices/v1/regular").json())


def test_settings_deposit_and_sandbox_responses_are_as_declared(schema, api):
    limits = api.patch(
        "/api/company/underpayment-limits",
        {"assets": {"btc": {"static": "0.0001", "percentage": 1}}},
        format="json",
    )
    assert limits.status_code == 200
    _check(schema, "/api/company/underpayment-limits", "patch", 200, limits.json())
    _check(
        schema,
        "/api/company/underpayment-limits",
        "get",
        200,
        api.get("/api/company/underpayment-limits").json(),
    )
    static = api.post(
        "/api/addresses/v1/static-deposits",
        {"internal_user_id": "user-1", "asset": "ton", "network": "ton"},
        format="json",
    )
    _check(schema, "/api/addresses/v1/static-deposits", "post", 201, static.json())
    deposit = api.post(
        "/api/sandbox/deposits",
        {"address": static.json()["address"], "tag": static.json()["tag"], "asset": "ton", "amount": "1"},
        format="json",
    )
    _check(schema, "/api/sandbox/deposits", "post", 201, deposit.json())
    _check(
        schema,
        "/api/sandbox/blocks",
        "post",
        200,
        api.post("/api/sandbox/blocks", {"count": 1}, format="json").json(),
    )


def test_a_body_that_differs_from_the_declaration_is_caught(schema, paid_invoice):
    created, _, _ = paid_invoice
    wrong = {**created.json(), "status": "paid"}  # not an invoice status
    with pytest.raises(ValidationError):
        _check(schema, "/api/invoices/v1/regular", "post", 201, wrong)


# --- every operation: typed bodies, pages, enums from the registry, its error answers ---------------------


def _operations(schema):  # type: ignore[no-untyped-def]
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            yield path, method, operation


def _component(schema, ref: str) -> dict:  # type: ignore[type-arg]
    return schema["components"]["schemas"][ref.rpartition("/")[2]]


def test_every_success_body_is_a_typed_component(schema):
    for path, method, operation in _operations(schema):
        successes = {status: r for status, r in operation["responses"].items() if status.startswith("2")}
        assert successes, f"{method} {path}"
        for status, response in successes.items():
            declared = response["content"]["application/json"]["schema"]
            if declared.get("type") == "array":
                declared = declared["items"]
            component = _component(schema, declared["$ref"])
            assert component["type"] == "object" and component["properties"], f"{method} {path} {status}"


def test_every_list_answers_a_page_with_limit_and_offset(schema):
    lists = [(p, o) for p, m, o in _operations(schema) if m == "get" and o["operationId"].endswith("_list")]
    assert {path for path, _ in lists} == {
        "/api/invoices/v1/regular",
        "/api/transactions/withdrawals",
        "/api/webhooks/events",
    }
    for path, operation in lists:
        page = _component(
            schema, operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        )
        assert set(page["required"]) == {"count", "next", "previous", "results"}, path
        assert page["properties"]["results"]["type"] == "array"
        parameters = {p["name"]: p["schema"] for p in operation["parameters"]}
        assert parameters["limit"] == {"type": "integer", "minimum": 1, "maximum": 1000, "default": 50}
        assert parameters["offset"] == {"type": "integer", "minimum": 0, "maximum": 10**9, "default": 0}


def test_enums_are_the_registrys_codes(schema):
    from core.assets import BASE_ASSETS, INVOICE_CURRENCIES, all_assets

    enums = schema["components"]["schemas"]
    assert enums["PaymentCodeEnum"]["enum"] == [asset.code for asset in all_assets()]
    assert enums["BaseAssetEnum"]["enum"] == list(BASE_ASSETS)
    assert enums["InvoiceCurrencyEnum"]["enum"] == list(INVOICE_CURRENCIES)


CONFLICTS = {
    ("/api/invoices/v1/regular/{invoice_id}/proceed", "post"),
    ("/api/invoices/v1/regular/{invoice_id}/accept", "post"),
    ("/api/invoices/v1/regular/{invoice_id}/refund", "post"),
    ("/api/sandbox/invoices/{invoice_id}/expire", "post"),
    ("/api/sandbox/withdrawals/{uid}/reject", "post"),
    ("/api/transactions/withdraw", "post"),
    ("/api/webhooks/events/{event_id}/redeliver", "post"),
    ("/api/company/members/{member_id}", "patch"),  # the last owner
    ("/api/company/members/{member_id}", "delete"),
}


def test_each_operation_lists_the_errors_it_can_answer_as_problems(schema):
    for path, method, operation in _operations(schema):
        responses = operation["responses"]
        errors = {status for status in responses if status[0] in "45"}
        where = f"{method} {path}: {sorted(errors)}"
        for status in errors:
            assert responses[status]["content"] == {
                "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}
            }, where
        assert "503" in errors and not errors & {"405", "406"}, where
        has_body = "requestBody" in operation
        assert {"413", "415"} <= errors if has_body else not errors & {"413", "415"}, where
        assert ("401" in errors) == (path != "/api/invoices/v1/regular/{invoice_id}" or method != "get"), (
            where
        )
        assert ("404" in errors) == ("{" in path or path.startswith("/api/sandbox/")), where
        assert ("409" in errors) == ((path, method) in CONFLICTS), where
        assert ("403" in errors) == ("401" in errors), where  # a token's scopes and networks
        assert "429" in errors, where  # per client address, or per token (API_TOKEN_RATE)
        if not has_body and not any(p["in"] in ("query", "header") for p in operation.get("parameters", [])):
            assert "400" not in errors or path.startswith("/api/sandbox/"), where


# --- more resources: real bodies against the declared ones ------------------------------------------------


def _wrong_invoice(api, anon, paid: str = "0.0009") -> str:  # type: ignore[no-untyped-def]
    created = api.post(
        "/api/invoices/v1/regular",
        {"invoiceCurrency": "usd", "items": [{"name": "Lamp", "price": 100}]},
        format="json",
    ).json()
    filled = anon.post(
        f"/api/invoices/v1/regular/{created['id']}/proceed",
        {"clientEmail": "client@example.com", "paymentCurrency": "btc"},
        format="json",
    ).json()
    address = filled["address"]
    api.post(
        "/api/sandbox/deposits",
        {"address": address["address"], "asset": "btc", "amount": paid},
        format="json",
    )
    api.post("/api/sandbox/blocks", {"count": 2}, format="json")
    assert anon.get(f"/api/invoices/v1/regular/{created['id']}").json()["status"] == "wrong"
    return str(created["id"])


def test_invoice_decisions_and_settings_are_as_declared(schema, api, anon):
    accepted = api.post(f"/api/invoices/v1/regular/{_wrong_invoice(api, anon)}/accept")
    assert accepted.json()["status"] == "done"
    _answer(schema, accepted, "/api/invoices/v1/regular/{invoice_id}/accept", "post")
    refunded = api.post(
        f"/api/invoices/v1/regular/{_wrong_invoice(api, anon)}/refund",
        {"address": "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"},
        format="json",
    )
    assert refunded.json()["status"] == "refunded", refunded.json()
    _answer(schema, refunded, "/api/invoices/v1/regular/{invoice_id}/refund", "post")
    pending = api.post(
        "/api/invoices/v1/regular",
        {"invoiceCurrency": "usd", "items": [{"name": "Tea", "price": "5"}]},
        format="json",
    ).json()["id"]
    anon.post(
        f"/api/invoices/v1/regular/{pending}/proceed",
        {"clientEmail": "c@example.com", "paymentCurrency": "btc"},
        format="json",
    )
    expired = api.post(f"/api/sandbox/invoices/{pending}/expire")
    assert expired.json()["status"] == "closed"
    _answer(schema, expired, "/api/sandbox/invoices/{invoice_id}/expire", "post")
    listed = api.get("/api/invoices/v1/regular?limit=2")
    assert listed.json()["next"] is not None
    _answer(schema, listed, "/api/invoices/v1/regular", "get")
    for value in ("https://shop.example/thanks", "", None):
        redirect = api.put("/api/company/settings/redirect-url", {"redirectURL": value}, format="json")
        assert redirect.json() == {"redirectURL": value}
        _answer(schema, redirect, "/api/company/settings/redirect-url", "put")


def test_static_deposit_repeated_is_a_200_as_declared(schema, api):
    body = {"internal_user_id": "user-2", "email": "u@example.com", "asset": "btc", "network": "btc"}
    first = api.post("/api/addresses/v1/static-deposits", body, format="json")
    again = api.post("/api/addresses/v1/static-deposits", body, format="json")

    assert (first.status_code, again.status_code) == (201, 200)
    assert "tag" not in again.json()
    _answer(schema, again, "/api/addresses/v1/static-deposits", "post")


def test_withdrawal_balance_and_auto_withdrawal_responses_are_as_declared(schema, api, merchant):
    from tests.chain import fund

    fund(merchant.company, "btc", "0.01")
    withdrawn = api.post(
        "/api/transactions/withdraw",
        {"items": [{"asset": "btc", "amount": "0.001", "to": "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"}]},
        format="json",
    )
    _answer(schema, withdrawn, "/api/transactions/withdraw", "post")
    uid = withdrawn.json()[0]["uid"]
    read = api.get(f"/api/transactions/withdrawals/{uid}")
    assert read.json()["txHash"] is None and read.json()["tag"] is None
    _answer(schema, read, "/api/transactions/withdrawals/{uid}", "get")
    _answer(schema, api.get("/api/transactions/withdrawals"), "/api/transactions/withdrawals", "get")
    rejected = api.post(f"/api/sandbox/withdrawals/{uid}/reject")
    assert rejected.json()["status"] == "rejected"
    _answer(schema, rejected, "/api/sandbox/withdrawals/{uid}/reject", "post")
    _answer(schema, api.get("/api/company/balances"), "/api/company/balances", "get")
    rule = {
        "amount": "0.5",
        "isEnabled": True,
        "withdrawalAddress": "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq",
    }
    patched = api.patch("/api/company/auto-withdrawals", {"assets": {"btc": rule}}, format="json")
    assert patched.status_code == 200
    assert b'"amount":0.5' in patched.content  # a JSON number, as declared
    _answer(schema, patched, "/api/company/auto-withdrawals", "patch")
    _answer(schema, api.get("/api/company/auto-withdrawals"), "/api/company/auto-withdrawals", "get")


def test_webhook_responses_are_as_declared(schema, api, merchant, receiver):
    from webhooks.delivery import webhook_deliver
    from webhooks.models import WebhookEvent

    url = api.put("/api/company/settings/webhook-url", {"webHookUrl": receiver.url}, format="json")
    _answer(schema, url, "/api/company/settings/webhook-url", "put")
    _wrong_invoice(api, APIClient())  # invoice, deposit-free: several invoice events
    for event in WebhookEvent.objects.order_by("created_at", "pk"):  # each object's events in order
        webhook_deliver(event_id=event.pk)
    listed = api.get("/api/webhooks/events")
    assert listed.json()["count"] >= 2
    _answer(schema, listed, "/api/webhooks/events", "get")
    event_id = listed.json()["results"][0]["id"]
    detail = api.get(f"/api/webhooks/events/{event_id}")
    assert detail.json()["attemptLog"]
    _answer(schema, detail, "/api/webhooks/events/{event_id}", "get")
    _answer(
        schema,
        api.post(f"/api/webhooks/events/{event_id}/redeliver"),
        "/api/webhooks/events/{event_id}/redeliver",
        "post",
    )
    cleared = api.put("/api/company/settings/webhook-url", {"webHookUrl": None}, format="json")
    assert cleared.json() == {"webHookUrl": None}
    _answer(schema, cleared, "/api/company/settings/webhook-url", "put")


def test_error_answers_are_the_declared_problems(schema, api, anon):
    invoice = api.post(
        "/api/invoices/v1/regular",
        {"invoiceCurrency": "usd", "items": [{"name": "Tea", "price": "5"}]},
        format="json",
    ).json()["id"]
    cases = [
        (
            api.post("/api/invoices/v1/regular", {"invoiceCurrency": "xyz", "items": []}, format="json"),
            "/api/invoices/v1/regular",
            "post",
            400,
        ),
        (anon.get("/api/invoices/v1/regular"), "/api/invoices/v1/regular", "get", 401),
        (
            anon.get("/api/invoices/v1/regular/00000000-0000-0000-0000-000000000000"),
            "/api/invoices/v1/regular/{invoice_id}",
            "get",
            404,
        ),
        (
            api.post(f"/api/invoices/v1/regular/{invoice}/accept"),
            "/api/invoices/v1/regular/{invoice_id}/accept",
            "post",
            409,
        ),
        (api.get("/api/transactions/withdrawals?limit=0"), "/api/transactions/withdrawals", "get", 400),
        (
            api.put(
                "/api/company/settings/webhook-url",
                data=b" " * 2**20 + b"{}",
                content_type="application/json",
            ),
            "/api/company/settings/webhook-url",
            "put",
            413,
        ),
        (
            api.put("/api/company/settings/webhook-url", data="x", content_type="text/plain"),
            "/api/company/settings/webhook-url",
            "put",
            415,
        ),
        (
            api.post(f"/api/webhooks/events/{invoice}/redeliver"),
            "/api/webhooks/events/{event_id}/redeliver",
            "post",
            404,
        ),
    ]
    for response, path, method, status in cases:
        assert response.status_code == status, response.content
        assert response["Content-Type"] == "application/problem+json"
        _answer(schema, response, path, method)


def _pointer(body, expression: str):  # type: ignore[no-untyped-def]
    """A `$response.body#/...` runtime expression evaluated on a response body."""
    prefix = "$response.body#/"
    assert expression.startswith(prefix), expression
    for part in expression.removeprefix(prefix).split("/"):
        body = body[int(part)] if isinstance(body, list) else body[part]
    return body


def test_the_declared_links_chain_create_to_read(schema, api, merchant):
    from tests.chain import fund

    fund(merchant.company, "btc", "0.01")
    created = {
        ("/api/invoices/v1/regular", "post"): api.post(
            "/api/invoices/v1/regular",
            {"invoiceCurrency": "usd", "items": [{"name": "Tea", "price": "5"}]},
            format="json",
        ),
        ("/api/transactions/withdraw", "post"): api.post(
            "/api/transactions/withdraw",
            {
                "items": [
                    {"asset": "btc", "amount": "0.001", "to": "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"}
                ]
            },
            format="json",
        ),
    }
    by_id = {operation["operationId"]: (path, method) for path, method, operation in _operations(schema)}
    linked = [
        (path, method, link)
        for path, method, operation in _operations(schema)
        for response in operation["responses"].values()
        for link in response.get("links", {}).values()
    ]
    assert {(path, method) for path, method, _ in linked} == set(created)
    for path, method, link in linked:
        target_path, target_method = by_id[link["operationId"]]
        ((name, expression),) = link["parameters"].items()
        value = _pointer(created[(path, method)].json(), expression)
        answer = getattr(api, target_method)(target_path.replace("{" + name + "}", str(value)))
        if target_method == "get":
            assert answer.status_code == 200, link
        assert answer.status_code != 404, link  # the link leads to the object just made
        _answer(schema, answer, target_path, target_method)

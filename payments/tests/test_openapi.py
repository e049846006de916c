import json
import re

import pytest
import yaml
from jsonschema import Draft4Validator, ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

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


# --- declared bodies match the real ones ------------------------------------------------------------------


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    from django.test import Client

    with django_db_blocker.unblock():
        return json.loads(Client(HTTP_HOST="127.0.0.1").get("/api/schema/?format=json").content)


def _check(schema, path: str, method: str, status: int, body) -> None:  # type: ignore[no-untyped-def]
    """`body` validates against the declared response of that operation (refs resolved in the document)."""
    declared = schema["paths"][path][method]["responses"][str(status)]["content"]["application/json"][
        "schema"
    ]
    assert "$ref" in declared, f"inline response schema, expected a component: {declared}"
    target = {"$ref": "urn:kassa" + declared["$ref"]}
    Draft4Validator(target, registry=_registry(schema)).validate(body)


def _nullable(node):  # type: ignore[no-untyped-def]
    """OpenAPI 3.0 `nullable: true` as JSON Schema: the type may also be null."""
    if isinstance(node, dict):
        node = {key: _nullable(value) for key, value in node.items()}
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

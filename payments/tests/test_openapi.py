import re

import pytest
import yaml

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

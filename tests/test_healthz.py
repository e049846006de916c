import pytest
from django.conf import settings

from config.celery import app

pytestmark = pytest.mark.django_db


@pytest.fixture
def broker_conf():
    """Point the Celery app at another broker for one test, restoring the configuration after."""
    saved = (app.conf.broker_url, dict(app.conf.broker_transport_options or {}))

    def use(url, options=None):
        app.conf.broker_url = url
        app.conf.broker_transport_options = options or {}

    yield use
    app.conf.broker_url, app.conf.broker_transport_options = saved


def test_healthz_reports_database_and_the_embedded_filesystem_broker(client, broker_conf, tmp_path):
    (tmp_path / "queue").mkdir()
    broker_conf(
        "filesystem://",
        {"data_folder_in": str(tmp_path / "queue"), "data_folder_out": str(tmp_path / "queue")},
    )

    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "broker": "ok"}


def test_healthz_is_503_when_the_broker_is_down(client, broker_conf):
    # Port 1 on loopback: nothing listens there, the connection is refused at once.
    broker_conf("redis://127.0.0.1:1/0")

    response = client.get("/healthz")

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["database"] == "ok"
    assert body["broker"].startswith("error")


@pytest.mark.redis
def test_healthz_reports_the_redis_broker(client, broker_conf):
    broker_conf(settings.REDIS_URL)

    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json()["broker"] == "ok"


@pytest.mark.redis
def test_cache_is_redis_when_redis_url_is_set():
    import redis
    from django.core.cache import cache

    cache.set("kassa-health-probe", "x", 30)

    raw = redis.Redis.from_url(settings.REDIS_URL)
    assert any(b"kassa-health-probe" in key for key in raw.keys("*kassa-health-probe*"))
    cache.delete("kassa-health-probe")

import pytest
from django.conf import settings

from config.celery import app

pytestmark = pytest.mark.django_db


def test_healthz_reports_database_and_broker(client):
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "broker": "ok"}


def test_healthz_is_503_when_the_broker_is_down(client, monkeypatch):
    # Port 1 on loopback: nothing listens there, the connection is refused at once.
    monkeypatch.setattr(app.conf, "broker_url", "redis://127.0.0.1:1/0")

    response = client.get("/healthz")

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["database"] == "ok"
    assert body["broker"].startswith("error")


@pytest.mark.redis
def test_cache_is_redis_when_redis_url_is_set():
    import redis
    from django.core.cache import cache

    cache.set("kassa-health-probe", "x", 30)

    raw = redis.Redis.from_url(settings.REDIS_URL)
    assert any(b"kassa-health-probe" in key for key in raw.keys("*kassa-health-probe*"))
    cache.delete("kassa-health-probe")

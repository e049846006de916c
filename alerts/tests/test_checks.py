from __future__ import annotations

import pytest

from alerts.checks import check_alert_channels


@pytest.mark.parametrize(
    ("emails", "url", "secret", "allow_http", "ids"),
    [
        ([], "", "", False, []),
        (["ops@kassa.test"], "https://alerts.example.com/hook", "s3cret", False, []),
        (["ops@kassa.test", "not an address"], "", "", False, ["alerts.E001"]),
        ([], "ftp://alerts.example.com/", "s3cret", True, ["alerts.E002"]),
        ([], "http://alerts.example.com/hook", "s3cret", False, ["alerts.E002"]),
        ([], "http://alerts.example.com/hook", "s3cret", True, []),
        ([], "https://alerts.example.com/hook", "  ", False, ["alerts.E003"]),
    ],
)
def test_a_channel_that_could_never_send_refuses_the_start(settings, emails, url, secret, allow_http, ids):
    settings.ALERT_EMAILS, settings.ALERT_WEBHOOK_URL, settings.ALERT_WEBHOOK_SECRET = emails, url, secret
    settings.WEBHOOK_ALLOW_HTTP = allow_http

    assert [error.id for error in check_alert_channels()] == ids

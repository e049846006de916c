import pytest

from payments.services import company_set_webhook_url
from webhooks.receiver import WebhookReceiver


@pytest.fixture
def receiver(merchant, settings):
    """A receiver on 127.0.0.1 holding the merchant's secret, set as the merchant's webhook URL."""
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    with WebhookReceiver(secret=merchant.signing_secret) as running:
        company_set_webhook_url(company_id=merchant.company.pk, url=running.url)
        merchant.company.refresh_from_db()
        yield running

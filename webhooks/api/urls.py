from django.urls import path

from webhooks.api import views

urlpatterns = [
    path("webhooks/events", views.WebhookEventListApi.as_view(), name="webhook-events"),
    path("webhooks/events/<uuid:event_id>", views.WebhookEventDetailApi.as_view(), name="webhook-event"),
    path(
        "webhooks/events/<uuid:event_id>/redeliver",
        views.WebhookEventRedeliverApi.as_view(),
        name="webhook-event-redeliver",
    ),
]

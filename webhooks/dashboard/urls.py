"""The webhook delivery pages of the merchant dashboard (mounted under /dashboard/ by config/urls.py)."""

from django.urls import URLPattern, path

from webhooks.dashboard import views

urlpatterns: list[URLPattern] = [
    path("webhooks/", views.event_list, name="event_list"),
    path("webhooks/<uuid:event_id>/", views.event_detail, name="event_detail"),
    path("webhooks/<uuid:event_id>/redeliver/", views.event_redeliver, name="event_redeliver"),
]

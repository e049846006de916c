"""The notifications page (mounted under /dashboard/ by config/urls.py)."""

from django.urls import URLPattern, path

from notifications.dashboard import views

urlpatterns: list[URLPattern] = [
    path("settings/notifications/", views.notification_settings, name="notification_settings"),
]

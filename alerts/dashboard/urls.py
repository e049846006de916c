"""The staff alerts page (mounted under /dashboard/ by config/urls.py)."""

from django.urls import URLPattern, path

from alerts.dashboard import views

urlpatterns: list[URLPattern] = [
    path("alerts/", views.alert_status, name="alerts"),
    path("alerts/<int:alert_id>/acknowledge/", views.alert_acknowledge_view, name="alert_acknowledge"),
    path("alerts/<int:alert_id>/resolve/", views.alert_resolve_view, name="alert_resolve"),
]

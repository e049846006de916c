"""The merchant dashboard (issue 8)."""

from django.urls import URLPattern, URLResolver

app_name = "dashboard"
urlpatterns: list[URLPattern | URLResolver] = []

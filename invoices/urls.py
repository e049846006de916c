"""The hosted pay page at /<invoice_id> (issue 7)."""

from django.urls import URLPattern, URLResolver

urlpatterns: list[URLPattern | URLResolver] = []

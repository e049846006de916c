"""The hosted pay page at /<invoice_id>.

Included last at the root (config/urls.py): only bare UUIDs match here, so /api/, /admin/, /static/,
/healthz and /sandbox/ are never shadowed; anything else falls through to the styled 404 page.
"""

from django.urls import URLPattern, URLResolver, include, path

from invoices import views

urlpatterns: list[URLPattern | URLResolver] = [
    path("i18n/", include("django.conf.urls.i18n")),  # set_language: the page's language switcher
    path("<uuid:invoice_id>", views.pay_page, name="pay"),
    path("<uuid:invoice_id>/sandbox/<slug:action>", views.pay_sandbox, name="pay-sandbox"),
]

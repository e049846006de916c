import os

from django.core.asgi import get_asgi_application

from payments.wsgi import asgi_charset_guard

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
application = asgi_charset_guard(get_asgi_application())

import os

from django.core.asgi import get_asgi_application

from config.runtime import settle_gc
from payments.wsgi import asgi_charset_guard

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
application = asgi_charset_guard(get_asgi_application())
settle_gc()  # after start-up, as config.wsgi

import os

from django.conf import settings
from django.core.asgi import get_asgi_application

from core.runtime import settle_gc
from core.wakeup import coalesce_wakes
from core.wsgi import asgi_charset_guard

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
application = asgi_charset_guard(get_asgi_application())
coalesce_wakes(settings.WAKE_DEBOUNCE_SECONDS)  # as config.wsgi
settle_gc()  # after start-up, as config.wsgi

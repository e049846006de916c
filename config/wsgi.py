import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from core.runtime import settle_gc
from core.wakeup import coalesce_wakes
from core.wsgi import charset_guard

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
application = charset_guard(get_wsgi_application())
coalesce_wakes(settings.WAKE_DEBOUNCE_SECONDS)  # a busy worker: one wake-up round trip per window
settle_gc()  # after start-up: in each gunicorn worker, or once in the master with --preload

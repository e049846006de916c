import os

from django.core.wsgi import get_wsgi_application

from config.runtime import settle_gc
from payments.wsgi import charset_guard

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
application = charset_guard(get_wsgi_application())
settle_gc()  # after start-up: in each gunicorn worker, or once in the master with --preload

import os

from django.core.wsgi import get_wsgi_application

from payments.wsgi import charset_guard

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
application = charset_guard(get_wsgi_application())

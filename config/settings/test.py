"""pytest: DATABASE_URL/REDIS_URL when given (CI: PostgreSQL + Redis), else SQLite and local memory."""

from .base import *  # noqa: F403
from .base import CELERY_BROKER_URL, REDIS_URL

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # speed; never in production
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WEBHOOK_ALLOW_PRIVATE_HOSTS = False
# Tests call tasks directly or through the real broker when a test asks for it; by default nothing leaves.
CELERY_BROKER_URL = REDIS_URL or CELERY_BROKER_URL
CELERY_TASK_ALWAYS_EAGER = False
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
WHITENOISE_USE_FINDERS = True  # serve app static files without collectstatic in tests

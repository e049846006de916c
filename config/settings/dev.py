"""Development (`make run`, which exports this module): DEBUG on, local webhook receivers allowed.

Processes load production settings unless told otherwise, so development commands run with
`DJANGO_SETTINGS_MODULE=config.settings.dev` (scripts/run.sh exports it).
"""

from core.keys import development_key

from .base import *  # noqa: F403
from .base import FIELD_ENCRYPTION_KEY, SECRET_KEY, VAR_DIR, env

DEBUG = env.bool("DEBUG", default=True)
# Keys made once and kept under var/ when the environment has none; only dev and test settings do this.
SECRET_KEY = SECRET_KEY or development_key(VAR_DIR / "secret_key", "django")
FIELD_ENCRYPTION_KEY = FIELD_ENCRYPTION_KEY or development_key(VAR_DIR / "field_encryption_key", "fernet")
WEBHOOK_ALLOW_PRIVATE_HOSTS = env.bool("WEBHOOK_ALLOW_PRIVATE_HOSTS", default=True)
WEBHOOK_ALLOW_HTTP = env.bool("WEBHOOK_ALLOW_HTTP", default=True)  # local receivers speak plain http
SANDBOX_ENABLED = env.bool("SANDBOX_ENABLED", default=True)
DEMO_MERCHANT_ALLOWED = True
ADMIN_ENABLED = env.bool("ADMIN_ENABLED", default=True)  # /admin/ (production: off by default)
# The EVM backend signs in-process with the public development seed (never in production).
EVM_SIGNER = env.str("EVM_SIGNER", default="local")

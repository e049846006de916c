"""Content-Security-Policy exceptions: the API docs pages (the site-wide policy is in settings).

Every response gets the strict policy of `CONTENT_SECURITY_POLICY` (django-csp's middleware). The two docs
pages run third-party UIs that inject their own <style> elements, so they may use inline styles; inline
script stays forbidden: Swagger UI is served by drf-spectacular's split view, which delivers its start-up
script as a separate same-origin file. Redoc also loads its fonts from Google Fonts and runs its search
index in a blob: worker.
"""

from __future__ import annotations

from typing import Any

from csp.decorators import csp_update
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerSplitView

_INLINE_STYLES = "'unsafe-inline'"


def swagger_ui_view(**initkwargs: Any) -> Any:
    view = SpectacularSwaggerSplitView.as_view(**initkwargs)
    return csp_update({"style-src": [_INLINE_STYLES]})(view)


def redoc_view(**initkwargs: Any) -> Any:
    view = SpectacularRedocView.as_view(**initkwargs)
    policy = {
        "style-src": [_INLINE_STYLES, "https://fonts.googleapis.com"],
        "font-src": ["https://fonts.gstatic.com"],
        "worker-src": ["'self'", "blob:"],
    }
    return csp_update(policy)(view)

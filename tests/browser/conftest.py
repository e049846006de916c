"""Browser tests of the pay page: Debian's Chromium driven by Playwright against pytest-django's live_server.

Never `playwright install`: the browser is /usr/bin/chromium (apt-get install chromium); CI installs it and
forbids skips. Every request the page makes outside loopback is aborted, so nothing else is contacted.
Screenshots go to test-artifacts/screenshots/<flow>-<viewport>-<step>.png (gitignored).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.core.cache import cache

# Playwright's sync API keeps an event loop running in this thread, and Django then refuses ORM calls
# (SynchronousOnlyOperation) that are plain synchronous code here: arranging invoices, mining blocks out of
# band. DJANGO_ALLOW_ASYNC_UNSAFE is set only while a browser runs (see `browser`); set for the whole
# session it would leak into other tests' subprocesses, where `check --deploy` refuses it (async.E001).
ASYNC_UNSAFE = "DJANGO_ALLOW_ASYNC_UNSAFE"
_ASYNC_UNSAFE_BEFORE = os.environ.get(ASYNC_UNSAFE)

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


def pytest_collection_finish(session: pytest.Session) -> None:
    # A browser test module that sets the variable when imported must not leave it on for the whole run.
    if _ASYNC_UNSAFE_BEFORE is None:
        os.environ.pop(ASYNC_UNSAFE, None)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not CHROMIUM.exists():
        pytest.skip("needs Debian's chromium: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    # Module scope: the event loop (and the variable) live only while this module's tests run.
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv(ASYNC_UNSAFE, "true")
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield chromium
        chromium.close()


@pytest.fixture(autouse=True)
def _pay_page_settings(settings, tmp_path):  # type: ignore[no-untyped-def]
    """Round prices, a fast poll and a short redirect; a fresh throttle budget (Redis keeps it in CI)."""
    settings.RATES_PROVIDER = "static"
    settings.RATES_STATIC_USD = {**settings.RATES_STATIC_USD, "btc": "100000", "eth": "2500", "ton": "5"}
    settings.RATES_FILE = str(tmp_path / "no-rates.json")
    settings.INVOICE_FEE_PERCENT = "1"
    settings.PAY_PAGE_POLL_SECONDS = 1
    settings.PAY_PAGE_REDIRECT_SECONDS = 2
    cache.clear()
    yield
    cache.clear()


def _only_loopback(route) -> None:  # type: ignore[no-untyped-def]
    host = urlsplit(route.request.url).hostname or ""
    if route.request.url.startswith(("data:", "blob:")) or host in LOOPBACK:
        route.continue_()
    else:
        route.abort()


def _is_csp_violation(text: str) -> bool:
    return "Content Security Policy" in text


@pytest.fixture
def open_page(browser, live_server):  # type: ignore[no-untyped-def]
    """open_page(viewport, javascript=True, locale="en-US") -> a Playwright page; JS errors fail the test.

    So do Content-Security-Policy violations (Chromium reports each one on the console) and an HTML page
    of the live server served without a Content-Security-Policy header.
    """
    contexts = []
    errors: list[str] = []
    csp_violations: list[str] = []
    pages_without_csp: list[str] = []

    def _on_console(msg) -> None:  # type: ignore[no-untyped-def]
        if _is_csp_violation(msg.text):
            csp_violations.append(msg.text)
        elif msg.type == "error":
            errors.append(msg.text)

    def _on_response(response) -> None:  # type: ignore[no-untyped-def]
        own_page = response.request.resource_type == "document" and response.url.startswith(live_server.url)
        is_html = response.headers.get("content-type", "").startswith("text/html")
        if own_page and is_html and "content-security-policy" not in response.headers:
            pages_without_csp.append(response.url)

    def _open(viewport: str, *, javascript: bool = True, locale: str = "en-US"):  # type: ignore[no-untyped-def]
        context = browser.new_context(  # type: ignore[attr-defined]
            viewport=VIEWPORTS[viewport],
            locale=locale,
            java_script_enabled=javascript,
            is_mobile=viewport == "phone",
            has_touch=viewport == "phone",
            device_scale_factor=1,
        )
        context.route("**/*", _only_loopback)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", _on_console)
        page.on("response", _on_response)
        return page

    _open.errors = errors  # type: ignore[attr-defined]
    yield _open
    for context in contexts:
        context.close()
    assert csp_violations == [], csp_violations
    assert pages_without_csp == [], pages_without_csp
    assert errors == [], errors


@pytest.fixture
def shot() -> Callable[..., Path]:
    """shot(page, flow, viewport, step): a full-page screenshot under test-artifacts/screenshots/."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def _shot(page, flow: str, viewport: str, step: str) -> Path:  # type: ignore[no-untyped-def]
        path = SCREENSHOTS / f"{flow}-{viewport}-{step}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return _shot

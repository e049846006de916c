"""Guards that must run before Django builds the request from the WSGI environ or the ASGI scope."""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterable
from typing import Any

from django.utils.http import parse_header_parameters

# Not a codec name: Django ignores a charset it cannot look up, and the API's parser refuses it with a 415.
REFUSED_CHARSET = "x-kassa-refused"

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def _is_text_encoding(name: str) -> bool:
    try:
        return codecs.lookup(name)._is_text_encoding  # type: ignore[attr-defined,no-any-return]
    except LookupError:
        return True  # unknown names are ignored by Django already


def neutralize_charset(environ: dict[str, Any]) -> None:
    """Replace a Content-Type charset that names a bytes-to-bytes codec (bz2, zlib, base64, hex...).

    Django takes any name `codecs.lookup` knows as the request encoding and, while building the request,
    decodes the query string with it: "bz2" then raises before any view or middleware could answer, and the
    server sends a bare 500. With the name replaced, the request is built, and the API answers 415.
    """
    content_type = environ.get("CONTENT_TYPE", "")
    if "charset" not in content_type.lower():
        return
    media_type, params = parse_header_parameters(content_type)
    charset = params.get("charset")
    if charset is None or _is_text_encoding(charset):
        return
    environ["CONTENT_TYPE"] = f"{media_type}; charset={REFUSED_CHARSET}"


def _safe_content_type(content_type: str) -> str:
    environ = {"CONTENT_TYPE": content_type}
    neutralize_charset(environ)
    return environ["CONTENT_TYPE"]


def charset_guard(app: WSGIApp) -> WSGIApp:
    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        neutralize_charset(environ)
        return app(environ, start_response)

    return guarded


def asgi_charset_guard(app: Any) -> Any:
    """The same for ASGI: the query string is text there, but a form body would be decoded with "bz2"."""

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope.get("type") == "http":
            headers = [
                (name, _safe_content_type(value.decode("latin-1")).encode("latin-1"))
                if name.lower() == b"content-type"
                else (name, value)
                for name, value in scope.get("headers", [])
            ]
            scope = {**scope, "headers": headers}
        return await app(scope, receive, send)

    return guarded

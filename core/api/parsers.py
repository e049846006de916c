"""The API's only parser: UTF-8 JSON with numbers read as Decimal (a float never touches money), 1 MiB cap.

Only UTF-8 is decoded: the `charset` parameter of Content-Type names a codec, and some of Python's codecs
(bz2, zlib, base64) are decompressors, so decoding with a client-chosen one lets 242 bytes inflate to
hundreds of megabytes. Any other charset is a 415 before a byte is decoded.
"""

from __future__ import annotations

import codecs
from typing import Any

from django.conf import settings
from django.utils.http import parse_header_parameters
from rest_framework.exceptions import ParseError, UnsupportedMediaType
from rest_framework.parsers import JSONParser

from core import jsonutil
from core.errors import PayloadTooLarge
from core.wsgi import REFUSED_CHARSET


def is_utf8(encoding: str) -> bool:
    """True for every spelling of UTF-8 ("utf-8", "UTF8", "utf_8"); unknown names are not UTF-8."""
    try:
        return codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


class DecimalJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = settings.API_MAX_BODY_BYTES
        request = (parser_context or {}).get("request")
        # From the header itself: Django drops a charset it cannot look up and falls back to UTF-8.
        _, params = parse_header_parameters(media_type or "")
        encoding = params.get("charset", "utf-8")
        if not is_utf8(encoding):
            # REFUSED_CHARSET stands for a bytes codec the server's entry point took out (core/wsgi.py).
            named = "" if encoding == REFUSED_CHARSET else f", not charset={encoding[:40]}"
            raise UnsupportedMediaType(media_type or "", detail=f"Only UTF-8 JSON is accepted{named}.")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and declared.isdigit() and int(declared) > limit:
            raise PayloadTooLarge()
        # Read one byte past the limit: a body without (or lying about) Content-Length is caught too.
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge()
        try:
            return jsonutil.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(f"The body is not valid JSON: {exc}") from exc

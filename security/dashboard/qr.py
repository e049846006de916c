"""The enrolment QR code, rendered on the server as inline SVG (no script, no image request)."""

from __future__ import annotations

import segno


def qr_svg(content: str, *, title: str) -> str:
    # Fixed size: the otpauth:// URI is short, and a phone camera reads 4 px modules at arm's length.
    svg: str = segno.make(content, error="m", micro=False).svg_inline(
        scale=4, border=4, dark="#000", light="#fff", svgclass="qr-code", title=title
    )
    return svg.replace("<svg ", '<svg role="img" focusable="false" ', 1)

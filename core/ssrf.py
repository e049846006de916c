"""SSRF guard for merchant webhook URLs (docs/decisions.md).

The URL is checked twice: when the merchant saves it (`validate_webhook_url`) and when a delivery
connects (`resolve_public_addresses`). The second check returns the exact addresses to dial, so a DNS
answer that changes between the check and the connect (rebinding) cannot steer a delivery inside.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from typing import NamedTuple, TypeAlias
from urllib.parse import urlsplit

from django.conf import settings

IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address
SockAddr: TypeAlias = tuple[str, int] | tuple[str, int, int, int] | tuple[int, bytes]
AddrInfo: TypeAlias = tuple[socket.AddressFamily, socket.SocketKind, int, str, SockAddr]

MAX_URL_LENGTH = 2048

# Indirection so tests can replace the resolver; nothing in this module calls socket.getaddrinfo directly.
_getaddrinfo = socket.getaddrinfo

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

_RFC1918 = (_V4("10.0.0.0/8"), _V4("172.16.0.0/12"), _V4("192.168.0.0/16"))
_SHARED_CGNAT = _V4("100.64.0.0/10")
_V4_DOCUMENTATION = (_V4("192.0.2.0/24"), _V4("198.51.100.0/24"), _V4("203.0.113.0/24"))
_V4_BENCHMARKING = _V4("198.18.0.0/15")
_V4_BROADCAST = ipaddress.IPv4Address("255.255.255.255")
# IETF protocol assignments. Python's is_global treats parts of these blocks differently across patch
# releases; naming them keeps the outcome the same on every interpreter, and no receiver lives there.
_V4_IETF_PROTOCOL = _V4("192.0.0.0/24")
_V6_IETF_PROTOCOL = _V6("2001::/23")

_V6_GLOBAL_UNICAST = _V6("2000::/3")
_V6_UNIQUE_LOCAL = _V6("fc00::/7")
_V6_DOCUMENTATION = (_V6("2001:db8::/32"), _V6("3fff::/20"))
_V4_MAPPED = _V6("::ffff:0:0/96")
_V4_TRANSLATED = _V6("::ffff:0:0:0/96")
_V4_COMPATIBLE = _V6("::/96")
_NAT64_WELL_KNOWN = _V6("64:ff9b::/96")
_SIX_TO_FOUR = _V6("2002::/16")
_TEREDO = _V6("2001::/32")

_HOST_LABEL = re.compile(r"[a-z0-9_-]{1,63}\Z")
# WHATWG URL rule: a host whose last label is a number is an IPv4 address or nothing (TLDs are never
# numeric), so "256.0.0.1" is refused instead of being sent to DNS as a name.
_NUMERIC_LABEL = re.compile(r"(?:[0-9]+|0x[0-9a-f]*)\Z")


class UnsafeWebhookUrl(ValueError):
    """The webhook URL is malformed or points somewhere Kassa must not connect; str() is the API detail."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Host(NamedTuple):
    shown: str  # as the merchant wrote it, for error messages
    query: str  # what goes to the resolver
    name: str  # lowercase ASCII, no trailing dot; "" for IP literals
    ip: IPAddress | None


def is_public_ip(ip: IPAddress) -> bool:
    return _refusal_reason(ip) is None


def validate_webhook_url(url: str) -> str:
    url = url.strip()
    host, port = _parse_url(url)
    if _private_hosts_allowed():
        return url

    if host.ip is not None:
        reason = _refusal_reason(host.ip)
        if reason is not None:
            raise UnsafeWebhookUrl(f"webHookUrl host {host.shown} is {reason}")
        return url

    _refuse_local_name(host)
    try:
        infos = _getaddrinfo(host.query, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        # Deliberate: a name that does not resolve is accepted at save time. DNS may be briefly down, or
        # the merchant saves the URL before publishing the record. It is not a hole: every delivery goes
        # through resolve_public_addresses, which refuses a name that does not resolve.
        return url
    _refuse_non_public(host, infos)
    return url


def resolve_public_addresses(host: str, port: int) -> list[AddrInfo]:
    """Resolve a webhook host (as `urlsplit(url).hostname` gives it) for connecting.

    Deliveries must connect only to the returned addresses, never re-resolve the name.
    """
    target = _parse_host(host, bracketed=":" in host)
    if not 1 <= port <= 65535:
        raise UnsafeWebhookUrl("webHookUrl port must be a number between 1 and 65535")
    allowed = _private_hosts_allowed()
    if target.ip is not None and not allowed:
        reason = _refusal_reason(target.ip)
        if reason is not None:
            raise UnsafeWebhookUrl(f"webHookUrl host {target.shown} is {reason}")
    if target.ip is None and not allowed:
        _refuse_local_name(target)

    try:
        infos = _getaddrinfo(target.query, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise UnsafeWebhookUrl(f"webHookUrl host {target.shown} does not resolve") from exc
    if not infos:
        raise UnsafeWebhookUrl(f"webHookUrl host {target.shown} does not resolve")
    if allowed:
        for info in infos:
            _sockaddr_ip(target, info)  # still refuse families we cannot dial
    else:
        _refuse_non_public(target, infos)
    return infos


def _private_hosts_allowed() -> bool:
    # Read per call, not at import, so settings overrides (tests, per-deployment config) take effect.
    return bool(settings.WEBHOOK_ALLOW_PRIVATE_HOSTS)


def _parse_url(url: str) -> tuple[_Host, int]:
    if len(url) > MAX_URL_LENGTH:
        raise UnsafeWebhookUrl(f"webHookUrl must be at most {MAX_URL_LENGTH} characters")
    # urlsplit silently drops tabs and newlines, and clients differ on the rest; refuse rather than guess.
    if any(ch.isspace() or ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in url):
        raise UnsafeWebhookUrl("webHookUrl must not contain spaces or control characters")
    # urllib3 ends the authority at a backslash, urlsplit does not: "http://127.0.0.1\@example.com/"
    # would be checked as example.com and fetched from 127.0.0.1.
    if "\\" in url:
        raise UnsafeWebhookUrl("webHookUrl must not contain backslashes")
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
    except ValueError as exc:
        raise UnsafeWebhookUrl("webHookUrl is not a valid URL") from exc
    if parts.scheme not in ("http", "https"):
        raise UnsafeWebhookUrl("webHookUrl must use http or https")
    if parts.scheme == "http" and not settings.WEBHOOK_ALLOW_HTTP:
        # Plain HTTP exposes every payment event to the network path, and lets it be altered in flight.
        raise UnsafeWebhookUrl("webHookUrl must use https (plain http is refused on this deployment)")
    if not hostname:
        raise UnsafeWebhookUrl("webHookUrl must include a host")

    authority = parts.netloc.rpartition("@")[2]
    port = _parse_port(authority, default=443 if parts.scheme == "https" else 80)
    return _parse_host(hostname, bracketed=authority.startswith("[")), port


def _parse_port(authority: str, *, default: int) -> int:
    port_text = authority.rpartition("]")[2] if authority.startswith("[") else authority
    _, colon, port_text = port_text.partition(":")
    if not colon or not port_text:
        return default
    # int() would accept "+443", " 443" and non-ASCII digits, which HTTP clients reject or read differently.
    if not (port_text.isascii() and port_text.isdigit()) or not 1 <= int(port_text) <= 65535:
        raise UnsafeWebhookUrl("webHookUrl port must be a number between 1 and 65535")
    return int(port_text)


def _parse_host(hostname: str, *, bracketed: bool) -> _Host:
    hostname = hostname.strip("[]").lower()
    if bracketed:
        return _parse_ipv6_literal(hostname)

    shown = hostname
    if not hostname.isascii():
        # The resolver and HTTP clients apply IDNA (with NFKC), so fullwidth digits spelling 127.0.0.1 are
        # 127.0.0.1; check the name they will actually use.
        try:
            hostname = hostname.encode("idna").decode("ascii").lower()
        except UnicodeError as exc:
            raise UnsafeWebhookUrl(f"webHookUrl host {shown} is not a valid hostname") from exc
    name = hostname.removesuffix(".")
    labels = name.split(".")
    if len(name) > 253 or not all(_HOST_LABEL.match(label) for label in labels):
        raise UnsafeWebhookUrl(f"webHookUrl host {shown} is not a valid hostname")

    # inet_aton on purpose: unlike ipaddress it accepts the legacy forms resolvers still honour
    # (2130706433, 0x7f000001, 0x7f.0.0.1, 0177.0.0.1, 127.1), which must be checked as addresses.
    try:
        packed = socket.inet_aton(name)
    except OSError:
        if _NUMERIC_LABEL.match(labels[-1]):
            raise UnsafeWebhookUrl(f"webHookUrl host {shown} is not a valid IPv4 address") from None
        return _Host(shown=shown, query=hostname, name=name, ip=None)
    ip = ipaddress.IPv4Address(packed)
    if shown != str(ip):
        shown = f"{shown} ({ip})"
    # The canonical form, so the resolver cannot read a legacy form differently from inet_aton.
    return _Host(shown=shown, query=str(ip), name="", ip=ip)


def _parse_ipv6_literal(hostname: str) -> _Host:
    # RFC 6874 zone ids arrive percent-encoded ("fe80::1%25eth0"); the resolver wants "fe80::1%eth0".
    address, percent, zone = hostname.replace("%25", "%", 1).partition("%")
    try:
        ip = ipaddress.IPv6Address(address)
    except ValueError as exc:
        raise UnsafeWebhookUrl(f"webHookUrl host {hostname} is not a valid IPv6 address") from exc
    query = f"{address}{percent}{zone}"
    return _Host(shown=query, query=query, name="", ip=ip)


def _refuse_local_name(host: _Host) -> None:
    # RFC 6761: these always mean this machine, whatever DNS says, so there is nothing to resolve.
    if host.name == "localhost" or host.name.endswith(".localhost"):
        raise UnsafeWebhookUrl(f"webHookUrl host {host.shown} is a local name")


def _refuse_non_public(host: _Host, infos: list[AddrInfo]) -> None:
    # Any one bad address is enough: a client may pick any of them, and an attacker controls the order.
    for info in infos:
        ip = _sockaddr_ip(host, info)
        reason = _refusal_reason(ip)
        if reason is not None:
            raise UnsafeWebhookUrl(f"webHookUrl host {host.shown} resolves to {ip}, {reason}")


def _sockaddr_ip(host: _Host, info: AddrInfo) -> IPAddress:
    family, sockaddr = info[0], info[4]
    if family not in (socket.AF_INET, socket.AF_INET6) or not isinstance(sockaddr[0], str):
        raise UnsafeWebhookUrl(f"webHookUrl host {host.shown} resolves to an unsupported address")
    return ipaddress.ip_address(sockaddr[0].partition("%")[0])


def _refusal_reason(ip: IPAddress) -> str | None:
    """Why Kassa must not connect to `ip`, as a phrase for the API error; None when it is public."""
    if isinstance(ip, ipaddress.IPv4Address):
        return _ipv4_refusal_reason(ip)
    return _ipv6_refusal_reason(ip)


def _ipv4_refusal_reason(ip: ipaddress.IPv4Address) -> str | None:
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_multicast:
        return "a multicast address"
    if any(ip in net for net in _RFC1918):
        return "a private address"
    if ip in _SHARED_CGNAT:
        return "a shared (carrier-grade NAT) address"
    if ip == _V4_BROADCAST:
        return "a broadcast address"
    if any(ip in net for net in _V4_DOCUMENTATION):
        return "a documentation address"
    if ip in _V4_BENCHMARKING:
        return "a benchmarking address"
    # is_global follows the IANA special-purpose registry (0/8, 240/4 ...).
    if ip in _V4_IETF_PROTOCOL or not ip.is_global or ip.is_reserved:
        return "a reserved address"
    return None


def _ipv6_refusal_reason(ip: ipaddress.IPv6Address) -> str | None:
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.is_loopback:
        return "a loopback address"

    embedded = _embedded_ipv4(ip)
    if embedded:
        for v4 in embedded:
            reason = _ipv4_refusal_reason(v4)
            if reason is not None:
                return f"{reason} (IPv4 {v4} embedded in IPv6)"
        # Mapped and NAT64 addresses reach exactly that IPv4 host (NAT64 is how IPv6-only deployments with
        # DNS64 see every IPv4-only receiver), so they are as public as it is. The other transition forms
        # are deprecated or not globally routable (IANA: not global), and no receiver needs one.
        if ip in _V4_MAPPED or ip in _NAT64_WELL_KNOWN:
            return None
        if ip in _SIX_TO_FOUR:
            return "a 6to4 tunnel address"
        if ip in _TEREDO:
            return "a Teredo tunnel address"
        return "a deprecated IPv4-compatible address"

    if ip.is_link_local:
        return "a link-local address"
    if ip.is_site_local:
        return "a site-local address"
    if ip.is_multicast:
        return "a multicast address"
    if ip in _V6_UNIQUE_LOCAL:
        return "a private address"
    if any(ip in net for net in _V6_DOCUMENTATION):
        return "a documentation address"
    # Outside 2000::/3 everything is reserved, special (64:ff9b:1::/48, 100::/64) or not allocated.
    if ip not in _V6_GLOBAL_UNICAST or ip in _V6_IETF_PROTOCOL or not ip.is_global:
        return "a reserved address"
    return None


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    low32 = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in _V4_MAPPED or ip in _V4_TRANSLATED or ip in _NAT64_WELL_KNOWN or ip in _V4_COMPATIBLE:
        return (low32,)
    if ip.sixtofour is not None:
        return (ip.sixtofour,)
    if ip.teredo is not None:
        server, client = ip.teredo
        return (client, server)
    return ()

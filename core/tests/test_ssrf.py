import ipaddress
import socket

import pytest
from pytest_django import Settings

from core import ssrf
from core.ssrf import UnsafeWebhookUrl, is_public_ip, resolve_public_addresses, validate_webhook_url


class FakeDns:
    """Stands in for getaddrinfo: answers only names the test registered, records every query."""

    def __init__(self) -> None:
        self.records: dict[str, list[str] | socket.gaierror] = {}
        self.queries: list[tuple[str, int, int]] = []

    def __call__(
        self, host: str, port: int, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0
    ) -> list[tuple]:
        self.queries.append((host, port, type))
        answer = self.records.get(host, socket.gaierror(socket.EAI_NONAME, "Name or service not known"))
        if isinstance(answer, socket.gaierror):
            raise answer
        return [_addrinfo(ip, port) for ip in answer]


def _addrinfo(ip: str, port: int) -> tuple:
    if ipaddress.ip_address(ip).version == 4:
        return (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (ip, port))
    return (socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (ip, port, 0, 0))


@pytest.fixture(autouse=True)
def dns(monkeypatch: pytest.MonkeyPatch) -> FakeDns:
    fake = FakeDns()
    monkeypatch.setattr(ssrf, "_getaddrinfo", fake)
    return fake


@pytest.fixture(autouse=True)
def _refuse_private_hosts(settings: Settings) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = False


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/hook", "webHookUrl must use http or https"),
        ("file:///etc/passwd", "webHookUrl must use http or https"),
        ("javascript:alert(1)", "webHookUrl must use http or https"),
        ("gopher://example.com:70/_HELO", "webHookUrl must use http or https"),
        ("dict://127.0.0.1:6379/info", "webHookUrl must use http or https"),
        ("example.com/hook", "webHookUrl must use http or https"),
        ("/webhooks/kassa", "webHookUrl must use http or https"),
        ("//example.com/hook", "webHookUrl must use http or https"),
        ("", "webHookUrl must use http or https"),
        ("http:///hook", "webHookUrl must include a host"),
        ("http://:8080/hook", "webHookUrl must include a host"),
        ("https:example.com", "webHookUrl must include a host"),
        ("https://exa mple.com/", "webHookUrl must not contain spaces or control characters"),
        ("https://example.com/a\tb", "webHookUrl must not contain spaces or control characters"),
        ("https://example.com/\r\nX-Injected: 1", "webHookUrl must not contain spaces or control characters"),
        ("https://example.com/\x00", "webHookUrl must not contain spaces or control characters"),
        ("https://example.com/\x7f", "webHookUrl must not contain spaces or control characters"),
        ("https://example.com/a\u00a0b", "webHookUrl must not contain spaces or control characters"),
        ("http://127.0.0.1\\@example.com/", "webHookUrl must not contain backslashes"),
        ("http://[::1/", "webHookUrl is not a valid URL"),
        ("http://[127.0.0.1]/", "webHookUrl is not a valid URL"),
        ("https://example.com:0/", "webHookUrl port must be a number between 1 and 65535"),
        ("https://example.com:65536/", "webHookUrl port must be a number between 1 and 65535"),
        ("https://example.com:https/", "webHookUrl port must be a number between 1 and 65535"),
        ("https://example.com:+443/", "webHookUrl port must be a number between 1 and 65535"),
        ("https://[2606:4700::1111]:99999/", "webHookUrl port must be a number between 1 and 65535"),
        ("http://a..example/", "webHookUrl host a..example is not a valid hostname"),
        ("http://%31%32%37.0.0.1/", "webHookUrl host %31%32%37.0.0.1 is not a valid hostname"),
        ("http://256.0.0.1/", "webHookUrl host 256.0.0.1 is not a valid IPv4 address"),
        ("http://example.123/", "webHookUrl host example.123 is not a valid IPv4 address"),
    ],
)
def test_malformed_or_non_http_url_is_refused(url: str, message: str, dns: FakeDns) -> None:
    with pytest.raises(UnsafeWebhookUrl) as excinfo:
        validate_webhook_url(url)

    assert str(excinfo.value) == message
    assert excinfo.value.message == message
    assert dns.queries == []


def test_url_of_exactly_max_length_is_accepted() -> None:
    url = "https://93.184.215.14/" + "a" * (ssrf.MAX_URL_LENGTH - len("https://93.184.215.14/"))

    assert len(url) == 2048
    assert validate_webhook_url(url) == url


def test_url_over_max_length_is_refused() -> None:
    url = "https://93.184.215.14/" + "a" * (ssrf.MAX_URL_LENGTH + 1 - len("https://93.184.215.14/"))

    with pytest.raises(UnsafeWebhookUrl) as excinfo:
        validate_webhook_url(url)

    assert str(excinfo.value) == "webHookUrl must be at most 2048 characters"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        # loopback
        ("http://127.0.0.1/", "webHookUrl host 127.0.0.1 is a loopback address"),
        ("http://127.255.255.254:8080/x", "webHookUrl host 127.255.255.254 is a loopback address"),
        ("HTTP://user:secret@127.0.0.1:8000/", "webHookUrl host 127.0.0.1 is a loopback address"),
        ("http://example.com@127.0.0.1/", "webHookUrl host 127.0.0.1 is a loopback address"),
        ("http://[::1]/", "webHookUrl host ::1 is a loopback address"),
        ("http://[0:0:0:0:0:0:0:1]:8080/", "webHookUrl host 0:0:0:0:0:0:0:1 is a loopback address"),
        # RFC 1918 and IPv6 unique local
        ("http://10.0.0.5/", "webHookUrl host 10.0.0.5 is a private address"),
        ("http://10.255.255.255/", "webHookUrl host 10.255.255.255 is a private address"),
        ("http://172.16.0.1/", "webHookUrl host 172.16.0.1 is a private address"),
        ("http://172.31.255.254/", "webHookUrl host 172.31.255.254 is a private address"),
        ("http://192.168.1.1/", "webHookUrl host 192.168.1.1 is a private address"),
        ("http://[fc00::1]/", "webHookUrl host fc00::1 is a private address"),
        ("http://[fd12:3456:789a::1]/", "webHookUrl host fd12:3456:789a::1 is a private address"),
        # link-local, including the cloud metadata endpoint
        (
            "http://169.254.169.254/latest/meta-data/",
            "webHookUrl host 169.254.169.254 is a link-local address",
        ),
        ("http://169.254.0.1/", "webHookUrl host 169.254.0.1 is a link-local address"),
        ("http://[fe80::1]/", "webHookUrl host fe80::1 is a link-local address"),
        ("http://[fe80::1%25eth0]:8080/", "webHookUrl host fe80::1%eth0 is a link-local address"),
        ("http://[fec0::1]/", "webHookUrl host fec0::1 is a site-local address"),
        # CGNAT, unspecified, multicast, broadcast, documentation, benchmarking, reserved
        ("http://100.64.0.1/", "webHookUrl host 100.64.0.1 is a shared (carrier-grade NAT) address"),
        (
            "http://100.127.255.254/",
            "webHookUrl host 100.127.255.254 is a shared (carrier-grade NAT) address",
        ),
        ("http://0.0.0.0:8000/", "webHookUrl host 0.0.0.0 is an unspecified address"),
        ("http://[::]/", "webHookUrl host :: is an unspecified address"),
        ("http://224.0.0.1/", "webHookUrl host 224.0.0.1 is a multicast address"),
        ("http://239.255.255.250/", "webHookUrl host 239.255.255.250 is a multicast address"),
        ("http://[ff02::1]/", "webHookUrl host ff02::1 is a multicast address"),
        ("http://[ff0e::1]/", "webHookUrl host ff0e::1 is a multicast address"),
        ("http://255.255.255.255/", "webHookUrl host 255.255.255.255 is a broadcast address"),
        ("http://192.0.2.10/", "webHookUrl host 192.0.2.10 is a documentation address"),
        ("http://198.51.100.7/", "webHookUrl host 198.51.100.7 is a documentation address"),
        ("http://203.0.113.9/", "webHookUrl host 203.0.113.9 is a documentation address"),
        ("http://[2001:db8::1]/", "webHookUrl host 2001:db8::1 is a documentation address"),
        ("http://198.18.0.1/", "webHookUrl host 198.18.0.1 is a benchmarking address"),
        ("http://240.0.0.1/", "webHookUrl host 240.0.0.1 is a reserved address"),
        ("http://0.1.2.3/", "webHookUrl host 0.1.2.3 is a reserved address"),
        ("http://192.0.0.8/", "webHookUrl host 192.0.0.8 is a reserved address"),
        ("http://192.0.0.9/", "webHookUrl host 192.0.0.9 is a reserved address"),
        ("http://[2001:4:112::1]/", "webHookUrl host 2001:4:112::1 is a reserved address"),
        ("http://[2001:20::1]/", "webHookUrl host 2001:20::1 is a reserved address"),
        ("http://[64:ff9b:1::a00:5]/", "webHookUrl host 64:ff9b:1::a00:5 is a reserved address"),
        ("http://[100::1]/", "webHookUrl host 100::1 is a reserved address"),
    ],
)
def test_non_public_ip_literal_is_refused_without_resolving(url: str, message: str, dns: FakeDns) -> None:
    with pytest.raises(UnsafeWebhookUrl) as excinfo:
        validate_webhook_url(url)

    assert str(excinfo.value) == message
    assert dns.queries == []


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "http://[::ffff:127.0.0.1]/",
            "webHookUrl host ::ffff:127.0.0.1 is a loopback address (IPv4 127.0.0.1 embedded in IPv6)",
        ),
        (
            "http://[::ffff:a00:5]/",
            "webHookUrl host ::ffff:a00:5 is a private address (IPv4 10.0.0.5 embedded in IPv6)",
        ),
        (
            "http://[::ffff:169.254.169.254]/",
            "webHookUrl host ::ffff:169.254.169.254 is a link-local address "
            "(IPv4 169.254.169.254 embedded in IPv6)",
        ),
        (
            "http://[::ffff:0:10.0.0.5]/",
            "webHookUrl host ::ffff:0:10.0.0.5 is a private address (IPv4 10.0.0.5 embedded in IPv6)",
        ),
        (
            "http://[::10.0.0.5]/",
            "webHookUrl host ::10.0.0.5 is a private address (IPv4 10.0.0.5 embedded in IPv6)",
        ),
        (
            "http://[::127.0.0.1]/",
            "webHookUrl host ::127.0.0.1 is a loopback address (IPv4 127.0.0.1 embedded in IPv6)",
        ),
        (
            "http://[2002:a00:5::1]/",
            "webHookUrl host 2002:a00:5::1 is a private address (IPv4 10.0.0.5 embedded in IPv6)",
        ),
        (
            "http://[2002:7f00:1::]/",
            "webHookUrl host 2002:7f00:1:: is a loopback address (IPv4 127.0.0.1 embedded in IPv6)",
        ),
        (
            "http://[64:ff9b::10.0.0.5]/",
            "webHookUrl host 64:ff9b::10.0.0.5 is a private address (IPv4 10.0.0.5 embedded in IPv6)",
        ),
        (
            "http://[64:ff9b::a9fe:a9fe]/",
            "webHookUrl host 64:ff9b::a9fe:a9fe is a link-local address "
            "(IPv4 169.254.169.254 embedded in IPv6)",
        ),
        (
            # Teredo client 192.0.2.45 behind server 65.54.227.120 (the RFC 4380 example).
            "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
            "webHookUrl host 2001:0:4136:e378:8000:63bf:3fff:fdd2 is a documentation address "
            "(IPv4 192.0.2.45 embedded in IPv6)",
        ),
        # Deprecated or non-routable transition forms are refused even around a public IPv4.
        ("http://[::8.8.8.8]/", "webHookUrl host ::8.8.8.8 is a deprecated IPv4-compatible address"),
        (
            "http://[::ffff:0:8.8.8.8]/",
            "webHookUrl host ::ffff:0:8.8.8.8 is a deprecated IPv4-compatible address",
        ),
        ("http://[2002:808:808::1]/", "webHookUrl host 2002:808:808::1 is a 6to4 tunnel address"),
        (
            "http://[2001:0:4136:e378:8000:63bf:f7f7:f7f7]/",
            "webHookUrl host 2001:0:4136:e378:8000:63bf:f7f7:f7f7 is a Teredo tunnel address",
        ),
    ],
)
def test_ipv6_embedding_non_public_ipv4_is_refused(url: str, message: str) -> None:
    with pytest.raises(UnsafeWebhookUrl) as excinfo:
        validate_webhook_url(url)

    assert str(excinfo.value) == message


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://2130706433/", "webHookUrl host 2130706433 (127.0.0.1) is a loopback address"),
        ("http://0x7f000001/", "webHookUrl host 0x7f000001 (127.0.0.1) is a loopback address"),
        ("http://0X7F000001:8080/", "webHookUrl host 0x7f000001 (127.0.0.1) is a loopback address"),
        ("http://0x7f.0.0.1/", "webHookUrl host 0x7f.0.0.1 (127.0.0.1) is a loopback address"),
        ("http://0177.0.0.1/", "webHookUrl host 0177.0.0.1 (127.0.0.1) is a loopback address"),
        ("http://017700000001/", "webHookUrl host 017700000001 (127.0.0.1) is a loopback address"),
        ("http://127.1/", "webHookUrl host 127.1 (127.0.0.1) is a loopback address"),
        ("http://127.0.1/", "webHookUrl host 127.0.1 (127.0.0.1) is a loopback address"),
        ("http://127.0.0.1./", "webHookUrl host 127.0.0.1. (127.0.0.1) is a loopback address"),
        ("http://10.1/", "webHookUrl host 10.1 (10.0.0.1) is a private address"),
        ("http://167772165/", "webHookUrl host 167772165 (10.0.0.5) is a private address"),
        (
            "http://0xa9.0xfe.0xa9.0xfe/",
            "webHookUrl host 0xa9.0xfe.0xa9.0xfe (169.254.169.254) is a link-local address",
        ),
        ("http://0/", "webHookUrl host 0 (0.0.0.0) is an unspecified address"),
        (
            "http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/",
            "webHookUrl host \uff11\uff12\uff17.\uff10.\uff10.\uff11 (127.0.0.1) is a loopback address",
        ),
    ],
)
def test_legacy_ipv4_literal_forms_are_checked_as_addresses(url: str, message: str, dns: FakeDns) -> None:
    with pytest.raises(UnsafeWebhookUrl) as excinfo:
        validate_webhook_url(url)

    assert str(excinfo.value) == message
    assert dns.queries == []


@pytest.mark.parametrize(
    "url",
    [
        "http://93.184.215.14/",
        "https://8.8.8.8:8443/kassa/hook?shop=1#frag",
        "https://134744072/hook",  # 8.8.8.8 in decimal
        "https://[2606:4700::1111]/hook",
        "https://[2606:4700::1111]:8443/hook",
        "https://[::ffff:8.8.8.8]/hook",
        "https://[64:ff9b::8.8.8.8]/hook",  # NAT64: how an IPv6-only host reaches an IPv4 receiver
        "https://user:pass@93.184.215.14/hook",
    ],
)
def test_public_ip_literal_is_accepted_without_resolving(url: str, dns: FakeDns) -> None:
    result = validate_webhook_url(url)

    assert result == url
    assert dns.queries == []


def test_surrounding_whitespace_is_stripped() -> None:
    result = validate_webhook_url("  https://93.184.215.14/hook\n")

    assert result == "https://93.184.215.14/hook"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://localhost/", "webHookUrl host localhost is a local name"),
        ("http://localhost:8000/hook", "webHookUrl host localhost is a local name"),
        ("http://LOCALHOST/", "webHookUrl host localhost is a local name"),
        ("http://localhost./", "webHookUrl host localhost. is a local name"),
        ("http://foo.localhost/", "webHookUrl host foo.localhost is a local name"),
        ("http://a.b.localhost./", "webHookUrl host a.b.localhost. is a local name"),
    ],
)
def test_localhost_names_are_refused_without_resolving(url: str, message: str, dns: FakeDns) -> None:
    dns.records["localhost"] = ["93.184.215.14"]  # even a lying resolver cannot make these public

    with pytest.raises(UnsafeWebhookUrl) as excinfo:
        validate_webhook_url(url)

    assert str(excinfo.value) == message
    assert dns.queries == []


def test_name_merely_ending_in_localhost_is_resolved_and_accepted(dns: FakeDns) -> None:
    dns.records["notlocalhost.example"] = ["93.184.215.14"]

    result = validate_webhook_url("https://notlocalhost.example/hook")

    assert result == "https://notlocalhost.example/hook"
    assert dns.queries == [("notlocalhost.example", 443, socket.SOCK_STREAM)]


@pytest.mark.parametrize(
    ("addresses", "message"),
    [
        (["10.0.0.5"], "webHookUrl host hooks.example.com resolves to 10.0.0.5, a private address"),
        (["127.0.0.1"], "webHookUrl host hooks.example.com resolves to 127.0.0.1, a loopback address"),
        (
            ["169.254.169.254"],
            "webHookUrl host hooks.example.com resolves to 169.254.169.254, a link-local address",
        ),
        (["::1"], "webHookUrl host hooks.example.com resolves to ::1, a loopback address"),
        (
            ["93.184.215.14", "127.0.0.1"],
            "webHookUrl host hooks.example.com resolves to 127.0.0.1, a loopback address",
        ),
        (
            ["2606:4700::1111", "fd00::5"],
            "webHookUrl host hooks.example.com resolves to fd00::5, a private address",
        ),
        (
            ["93.184.215.14", "::ffff:10.0.0.5"],
            "webHookUrl host hooks.example.com resolves to ::ffff:a00:5, "
            "a private address (IPv4 10.0.0.5 embedded in IPv6)",
        ),
    ],
)
def test_hostname_resolving_to_any_non_public_address_is_refused(
    addresses: list[str], message: str, dns: FakeDns
) -> None:
    dns.records["hooks.example.com"] = addresses

    with pytest.raises(UnsafeWebhookUrl) as save_error:
        validate_webhook_url("https://hooks.example.com/kassa")
    with pytest.raises(UnsafeWebhookUrl) as connect_error:
        resolve_public_addresses("hooks.example.com", 443)

    assert str(save_error.value) == message
    assert str(connect_error.value) == message


def test_hostname_resolving_only_to_public_addresses_is_accepted(dns: FakeDns) -> None:
    dns.records["hooks.example.com"] = ["93.184.215.14", "2606:4700::1111"]

    result = validate_webhook_url("https://hooks.example.com:8443/kassa")

    assert result == "https://hooks.example.com:8443/kassa"
    assert dns.queries == [("hooks.example.com", 8443, socket.SOCK_STREAM)]


def test_trailing_dot_hostname_is_resolved_as_written(dns: FakeDns) -> None:
    dns.records["hooks.example.com."] = ["10.0.0.5"]

    with pytest.raises(UnsafeWebhookUrl) as excinfo:
        validate_webhook_url("http://hooks.example.com./kassa")

    assert str(excinfo.value) == "webHookUrl host hooks.example.com. resolves to 10.0.0.5, a private address"
    assert dns.queries == [("hooks.example.com.", 80, socket.SOCK_STREAM)]


def test_internationalised_hostname_is_resolved_in_its_ascii_form(dns: FakeDns) -> None:
    dns.records["xn--bcher-kva.example"] = ["192.168.0.10"]

    with pytest.raises(UnsafeWebhookUrl) as excinfo:
        validate_webhook_url("https://b\u00fccher.example/hook")

    assert str(excinfo.value) == (
        "webHookUrl host b\u00fccher.example resolves to 192.168.0.10, a private address"
    )
    assert dns.queries == [("xn--bcher-kva.example", 443, socket.SOCK_STREAM)]


@pytest.mark.parametrize("error_code", [socket.EAI_NONAME, socket.EAI_AGAIN])
def test_unresolvable_name_is_accepted_at_save_time_but_refused_at_connect_time(
    error_code: int, dns: FakeDns
) -> None:
    dns.records["hooks.example.com"] = socket.gaierror(error_code, "lookup failed")

    saved = validate_webhook_url("https://hooks.example.com/kassa")
    with pytest.raises(UnsafeWebhookUrl) as excinfo:
        resolve_public_addresses("hooks.example.com", 443)

    assert saved == "https://hooks.example.com/kassa"
    assert str(excinfo.value) == "webHookUrl host hooks.example.com does not resolve"


def test_resolve_public_addresses_returns_the_resolved_addresses_to_connect_to(dns: FakeDns) -> None:
    dns.records["hooks.example.com"] = ["93.184.215.14", "2606:4700::1111"]

    infos = resolve_public_addresses("hooks.example.com", 8443)

    assert infos == [
        (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("93.184.215.14", 8443)),
        (socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("2606:4700::1111", 8443, 0, 0)),
    ]
    assert dns.queries == [("hooks.example.com", 8443, socket.SOCK_STREAM)]


def test_resolve_public_addresses_refuses_an_empty_answer(dns: FakeDns) -> None:
    dns.records["hooks.example.com"] = []

    with pytest.raises(UnsafeWebhookUrl) as excinfo:
        resolve_public_addresses("hooks.example.com", 443)

    assert str(excinfo.value) == "webHookUrl host hooks.example.com does not resolve"


@pytest.mark.parametrize(
    ("host", "message"),
    [
        ("localhost", "webHookUrl host localhost is a local name"),
        ("api.localhost.", "webHookUrl host api.localhost. is a local name"),
        ("127.0.0.1", "webHookUrl host 127.0.0.1 is a loopback address"),
        ("0x7f000001", "webHookUrl host 0x7f000001 (127.0.0.1) is a loopback address"),
        ("::1", "webHookUrl host ::1 is a loopback address"),
        ("[::1]", "webHookUrl host ::1 is a loopback address"),
        ("fe80::1%25eth0", "webHookUrl host fe80::1%eth0 is a link-local address"),
        ("256.0.0.1", "webHookUrl host 256.0.0.1 is not a valid IPv4 address"),
    ],
)
def test_resolve_public_addresses_refuses_local_hosts_without_resolving(
    host: str, message: str, dns: FakeDns
) -> None:
    with pytest.raises(UnsafeWebhookUrl) as excinfo:
        resolve_public_addresses(host, 443)

    assert str(excinfo.value) == message
    assert dns.queries == []


@pytest.mark.parametrize("port", [0, -1, 65536])
def test_resolve_public_addresses_refuses_invalid_port(port: int, dns: FakeDns) -> None:
    dns.records["hooks.example.com"] = ["93.184.215.14"]

    with pytest.raises(UnsafeWebhookUrl) as excinfo:
        resolve_public_addresses("hooks.example.com", port)

    assert str(excinfo.value) == "webHookUrl port must be a number between 1 and 65535"


def test_resolve_public_addresses_with_real_resolver_checks_numeric_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Numeric hosts never reach DNS, so the real resolver is safe here; it proves the checks apply to
    # genuine getaddrinfo output, not only to the fake's.
    monkeypatch.setattr(ssrf, "_getaddrinfo", socket.getaddrinfo)

    infos = resolve_public_addresses("93.184.215.14", 443)

    assert [info[4][:2] for info in infos] == [("93.184.215.14", 443)]
    assert all(info[1] == socket.SOCK_STREAM for info in infos)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/hook",
        "http://localhost:8000/hook",
        "http://receiver.localhost/hook",
        "http://[::1]:8000/hook",
        "http://10.1/hook",
        "http://192.168.1.20/hook",
        "http://[fe80::1%25eth0]:8000/hook",
        "http://receiver.lan/hook",
    ],
)
def test_allow_private_hosts_accepts_private_receivers_without_resolving(
    url: str, settings: Settings, dns: FakeDns
) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True

    result = validate_webhook_url(url)

    assert result == url
    assert dns.queries == []


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://127.0.0.1/", "webHookUrl must use http or https"),
        ("file:///etc/passwd", "webHookUrl must use http or https"),
        ("http://127.0.0.1:0/", "webHookUrl port must be a number between 1 and 65535"),
        ("http://local host/", "webHookUrl must not contain spaces or control characters"),
        ("http://127.0.0.1/" + "a" * 2048, "webHookUrl must be at most 2048 characters"),
    ],
)
def test_allow_private_hosts_still_applies_syntax_checks(url: str, message: str, settings: Settings) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True

    with pytest.raises(UnsafeWebhookUrl) as excinfo:
        validate_webhook_url(url)

    assert str(excinfo.value) == message


def test_allow_private_hosts_lets_resolve_public_addresses_return_private_addresses(
    settings: Settings, dns: FakeDns
) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True
    dns.records["localhost"] = ["127.0.0.1", "::1"]

    infos = resolve_public_addresses("localhost", 8000)

    assert [info[4][0] for info in infos] == ["127.0.0.1", "::1"]


def test_allow_private_hosts_still_refuses_unresolvable_name_at_connect_time(
    settings: Settings,
) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = True

    with pytest.raises(UnsafeWebhookUrl) as excinfo:
        resolve_public_addresses("receiver.lan", 8000)

    assert str(excinfo.value) == "webHookUrl host receiver.lan does not resolve"


def test_private_hosts_are_refused_unless_a_deployment_allows_them(settings: Settings) -> None:
    from config.settings import base

    assert base.WEBHOOK_ALLOW_PRIVATE_HOSTS is False  # the default every deployment starts from
    settings.WEBHOOK_ALLOW_PRIVATE_HOSTS = False

    with pytest.raises(UnsafeWebhookUrl) as excinfo:
        validate_webhook_url("http://127.0.0.1/")

    assert str(excinfo.value) == "webHookUrl host 127.0.0.1 is a loopback address"


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("93.184.215.14", True),
        ("8.8.8.8", True),
        ("1.1.1.1", True),
        ("2606:4700::1111", True),
        ("2a00:1450:4001:80b::200e", True),
        ("::ffff:8.8.8.8", True),
        ("64:ff9b::808:808", True),
        ("127.0.0.1", False),
        ("10.0.0.1", False),
        ("172.20.1.1", False),
        ("192.168.0.1", False),
        ("169.254.169.254", False),
        ("100.64.0.1", False),
        ("0.0.0.0", False),  # noqa: S104 - an address under test, not a bind
        ("224.0.0.251", False),
        ("255.255.255.255", False),
        ("240.0.0.1", False),
        ("::", False),
        ("::1", False),
        ("fe80::1", False),
        ("fd00::1", False),
        ("ff0e::1", False),
        ("2001:db8::1", False),
        ("::ffff:10.0.0.1", False),
        ("64:ff9b::a00:1", False),
        ("2002:c0a8:1::1", False),
        ("2002:808:808::1", False),
        ("::8.8.8.8", False),
    ],
)
def test_is_public_ip(address: str, expected: bool) -> None:
    result = is_public_ip(ipaddress.ip_address(address))

    assert result is expected

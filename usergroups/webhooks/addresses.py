"""Where a webhook may send: the SSRF rule (CONTRACT section 8).

``https`` to a public address only, unless ``USERGROUPS["WEBHOOK_ALLOW_PRIVATE"]``,
which also allows ``http`` and private, loopback, link-local or reserved addresses. The
rule is applied to the URL at registration and to the addresses the host name resolves
to at every delivery, and the delivery connects to the address that was checked, so a
name that resolves elsewhere later (DNS rebinding) cannot reach inside. An IPv6 address
that carries an IPv4 one (a translator's or a tunnel's) is judged by that IPv4 address.
"""

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

MAX_URL_LENGTH = 2000
# Said with each refusal of an address: what allows one, and what for.
_PRIVATE_HINT = 'USERGROUPS["WEBHOOK_ALLOW_PRIVATE"] allows it, for tests and development only'


class RefusedURL(ValueError):
    """The URL, or an address its host resolves to, is not allowed; the message says why."""


@dataclass(frozen=True)
class Target:
    """A checked URL: its parts, and the address to connect to."""

    scheme: str
    host: str
    port: int
    path: str  # with the query string
    address: str


# IPv6 prefixes whose addresses carry an IPv4 one (CONTRACT 8a): a packet sent to them
# reaches that IPv4 address through a translator or a tunnel.
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_IPV4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # RFC 2765 (SIIT)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
# Where RFC 6052 puts the IPv4 address inside a local-use NAT64 prefix of each length:
# the translator's prefix length is its own, so every place is judged.
_NAT64_LOCAL_PREFIX_LENGTHS = (48, 56, 64, 96)


def _rfc6052_ipv4(ip: ipaddress.IPv6Address, prefix_length: int) -> ipaddress.IPv4Address:
    """The IPv4 address at ``prefix_length`` of ``ip`` (RFC 6052: bits 64-71 are skipped)."""
    value = int(ip)
    without_u = (value >> 64 << 56) | (value & (1 << 56) - 1)  # 120 bits
    start = prefix_length if prefix_length <= 64 else prefix_length - 8
    return ipaddress.IPv4Address(without_u >> (120 - start - 32) & 0xFFFFFFFF)


def carried_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses ``ip`` carries (none when it carries none): IPv4-mapped,
    IPv4-compatible, IPv4-translated, NAT64, 6to4, and Teredo's server and client."""
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if ip in _IPV4_COMPATIBLE or ip in _IPV4_TRANSLATED or ip in _NAT64:
        return [ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)]
    if ip in _NAT64_LOCAL:
        return [_rfc6052_ipv4(ip, length) for length in _NAT64_LOCAL_PREFIX_LENGTHS]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        return list(ip.teredo)  # the server, and the client (Python undoes its XOR)
    return []


def is_public(address: str) -> bool:
    """Whether ``address`` is a globally routable unicast address (not private,
    loopback, link-local, shared, reserved, multicast or unspecified). An IPv6 address
    that carries an IPv4 one is judged by it (by each, when it carries several)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and (carried := carried_ipv4(ip)):
        return all(ipv4.is_global and not ipv4.is_multicast for ipv4 in carried)
    return ip.is_global and not ip.is_multicast


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


def parse(url: str, *, allow_private: bool) -> SplitResult:
    """The parts of ``url`` if its form is allowed, else :class:`RefusedURL`."""
    if len(url) > MAX_URL_LENGTH:
        raise RefusedURL(f"At most {MAX_URL_LENGTH} characters.")
    if any(char <= " " or char == "\x7f" for char in url):
        raise RefusedURL("No spaces or control characters.")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError on a bad port)
    except ValueError:
        raise RefusedURL("Not a URL.") from None
    schemes = ("https", "http") if allow_private else ("https",)
    if parts.scheme.lower() not in schemes:
        raise RefusedURL(
            "Must be http(s)."
            if allow_private
            else f"Must be an https URL (http: {_PRIVATE_HINT})."
        )
    if not parts.hostname:
        raise RefusedURL("Must name a host.")
    if parts.username is not None or parts.password is not None:
        raise RefusedURL("Must not hold credentials.")
    if parts.fragment:
        raise RefusedURL("Must not have a fragment.")
    literal = _literal(parts.hostname)
    if literal is not None and not allow_private and not is_public(literal):
        raise RefusedURL(f"Must point to a public address ({_PRIVATE_HINT}).")
    return parts


def resolve(url: str, *, allow_private: bool) -> Target:
    """Check ``url`` and the addresses its host resolves to now: the target to connect
    to, else :class:`RefusedURL` (every address must be allowed, not just one)."""
    parts = parse(url, allow_private=allow_private)
    host = parts.hostname or ""
    scheme = parts.scheme.lower()
    port = parts.port or (443 if scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise RefusedURL("The host name does not resolve.") from None
    addresses = [str(info[4][0]) for info in infos]
    if not addresses:
        raise RefusedURL("The host name does not resolve.")
    if not allow_private and not all(is_public(address) for address in addresses):
        raise RefusedURL(f"The host resolves to an address that is not public ({_PRIVATE_HINT}).")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(scheme, host, port, path, addresses[0])

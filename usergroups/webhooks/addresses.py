"""Where a webhook may send: the SSRF rule (CONTRACT section 8).

``https`` to a public address only, unless ``USERGROUPS["WEBHOOK_ALLOW_PRIVATE"]``,
which also allows ``http`` and private, loopback, link-local or reserved addresses. The
rule is applied to the URL at registration and to the addresses the host name resolves
to at every delivery, and the delivery connects to the address that was checked, so a
name that resolves elsewhere later (DNS rebinding) cannot reach inside.
"""

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

MAX_URL_LENGTH = 2000


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


def is_public(address: str) -> bool:
    """Whether ``address`` is a globally routable unicast address (not private,
    loopback, link-local, shared, reserved, multicast or unspecified)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


PRIVATE_REFUSED = (
    "Must point to a public address (private and loopback ones only with the server's "
    "WEBHOOK_ALLOW_PRIVATE)."
)


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
            else "Must be an https URL (http too with the server's WEBHOOK_ALLOW_PRIVATE)."
        )
    if not parts.hostname:
        raise RefusedURL("Must name a host.")
    if parts.username is not None or parts.password is not None:
        raise RefusedURL("Must not hold credentials.")
    if parts.fragment:
        raise RefusedURL("Must not have a fragment.")
    literal = _literal(parts.hostname)
    if literal is not None and not allow_private and not is_public(literal):
        raise RefusedURL(PRIVATE_REFUSED)
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
        raise RefusedURL(
            "The host resolves to an address that is not public "
            "(allowed only with the server's WEBHOOK_ALLOW_PRIVATE)."
        )
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(scheme, host, port, path, addresses[0])

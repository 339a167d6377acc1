"""One POST to a webhook, with the standard library: connected to the address that
:func:`usergroups.webhooks.addresses.resolve` checked, never following a redirect (a 3xx
is an answer like any other non-2xx), never through a proxy, within a connect timeout
and then a timeout for each read, keeping only a short excerpt of the answer."""

import http.client
import socket
import ssl
from dataclasses import dataclass

from usergroups.webhooks.addresses import Target

#: Bytes of an answer read, and characters of it kept.
EXCERPT_CHARACTERS = 200
USER_AGENT = "django-usergroups-webhooks"


@dataclass(frozen=True)
class Outcome:
    """What an attempt got: ``status`` (None when no answer came) and a short text."""

    status: int | None
    excerpt: str

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass(frozen=True)
class Timeouts:
    """Seconds to wait for the connection, then for each read (and write) on it."""

    connect: float
    read: float


class ConnectTimeout(TimeoutError):
    """No connection within :attr:`Timeouts.connect`."""


def _connect(address: str, port: int, timeouts: Timeouts) -> socket.socket:
    try:
        sock = socket.create_connection((address, port), timeouts.connect)
    except TimeoutError:
        raise ConnectTimeout from None
    sock.settimeout(timeouts.read)
    return sock


class PinnedHTTPConnection(http.client.HTTPConnection):
    """Connects to ``address`` while naming ``host`` in the request."""

    def __init__(self, target: Target, timeouts: Timeouts) -> None:
        super().__init__(target.host, target.port, timeout=timeouts.read)
        self.address, self.timeouts = target.address, timeouts

    def connect(self) -> None:
        self.sock = _connect(self.address, self.port, self.timeouts)


class PinnedHTTPSConnection(http.client.HTTPSConnection):
    """Connects to ``address``; TLS verifies the certificate for ``host`` (SNI too)."""

    def __init__(self, target: Target, timeouts: Timeouts) -> None:
        self.tls = ssl.create_default_context()
        super().__init__(target.host, target.port, timeout=timeouts.read, context=self.tls)
        self.address, self.timeouts = target.address, timeouts

    def connect(self) -> None:
        raw = _connect(self.address, self.port, self.timeouts)
        self.sock = self.tls.wrap_socket(raw, server_hostname=self.host)


def post(target: Target, body: bytes, headers: dict[str, str], timeouts: Timeouts) -> Outcome:
    """POST ``body``; an error (refused, reset, timeout, TLS) is an outcome without status."""
    connection_class = PinnedHTTPSConnection if target.scheme == "https" else PinnedHTTPConnection
    connection = connection_class(target, timeouts)
    try:
        connection.request(
            "POST",
            target.path,
            body=body,
            headers={
                **headers,
                "Content-Type": "application/json",
                "User-Agent": USER_AGENT,
            },
        )
        response = connection.getresponse()
        text = response.read(EXCERPT_CHARACTERS * 4).decode("utf-8", errors="replace")
        return Outcome(response.status, text[:EXCERPT_CHARACTERS])
    except (OSError, http.client.HTTPException) as exc:
        if isinstance(exc, ConnectTimeout):
            reason = "connecting timed out"
        elif isinstance(exc, TimeoutError):
            reason = "timed out"
        else:
            reason = type(exc).__name__
        return Outcome(None, f"No answer: {reason}"[:EXCERPT_CHARACTERS])
    finally:
        connection.close()

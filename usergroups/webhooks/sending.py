"""One POST to a webhook, with the standard library: connected to the address that
:func:`usergroups.webhooks.addresses.resolve` checked, never following a redirect (a 3xx
is an answer like any other non-2xx), never through a proxy, within a timeout, keeping
only a short excerpt of the answer."""

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


class PinnedHTTPConnection(http.client.HTTPConnection):
    """Connects to ``address`` while naming ``host`` in the request."""

    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self.address = target.address

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)


class PinnedHTTPSConnection(http.client.HTTPSConnection):
    """Connects to ``address``; TLS verifies the certificate for ``host`` (SNI too)."""

    def __init__(self, target: Target, timeout: float) -> None:
        self.tls = ssl.create_default_context()
        super().__init__(target.host, target.port, timeout=timeout, context=self.tls)
        self.address = target.address

    def connect(self) -> None:
        raw = socket.create_connection((self.address, self.port), self.timeout)
        self.sock = self.tls.wrap_socket(raw, server_hostname=self.host)


def post(target: Target, body: bytes, headers: dict[str, str], timeout: float) -> Outcome:
    """POST ``body``; an error (refused, reset, timeout, TLS) is an outcome without status."""
    connection_class = PinnedHTTPSConnection if target.scheme == "https" else PinnedHTTPConnection
    connection = connection_class(target, timeout)
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
        reason = "timed out" if isinstance(exc, TimeoutError) else type(exc).__name__
        return Outcome(None, f"No answer: {reason}"[:EXCERPT_CHARACTERS])
    finally:
        connection.close()

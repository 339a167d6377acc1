"""One POST to a webhook, with the standard library: connected to the address that
:func:`usergroups.webhooks.addresses.resolve` checked, never following a redirect (a 3xx
is an answer like any other non-2xx), never through a proxy, within a connect timeout
and then one bound on everything else (the TLS handshake, the request, the answer),
keeping only a short excerpt of the answer."""

import http.client
import socket
import ssl
import threading
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
    """Seconds to wait for the connection, then for the whole exchange on it: an attempt
    lasts at most the two together."""

    connect: float
    exchange: float


class ConnectTimeout(TimeoutError):
    """No connection within :attr:`Timeouts.connect`."""


class Deadline:
    """Ends the exchange on ``sock`` ``seconds`` from now, whatever the receiver does.

    A timeout on the socket bounds each read only: a receiver that trickles its answer,
    a byte at a time, would hold the attempt past its lease and have it sent again beside
    it. So a timer shuts the connection down (through a duplicate of the socket, which
    this object alone uses), and the read that waits returns at once."""

    def __init__(self, sock: socket.socket, seconds: float) -> None:
        self._watched = sock.dup()
        self._lock = threading.Lock()
        self._over = False
        self.passed = False
        self._timer = threading.Timer(seconds, self._end)
        self._timer.daemon = True
        self._timer.start()

    def _end(self) -> None:
        with self._lock:
            if self._over:
                return
            self.passed = True
            try:
                self._watched.shutdown(socket.SHUT_RDWR)
            except OSError:  # the receiver closed it already
                pass

    def cancel(self) -> None:
        self._timer.cancel()
        with self._lock:  # not while _end shuts it down: its descriptor could be reused
            self._over = True
            self._watched.close()


def _connect(address: str, port: int, timeouts: Timeouts) -> socket.socket:
    try:
        sock = socket.create_connection((address, port), timeouts.connect)
    except TimeoutError:
        raise ConnectTimeout from None
    sock.settimeout(timeouts.exchange)
    return sock


class PinnedHTTPConnection(http.client.HTTPConnection):
    """Connects to ``address`` while naming ``host`` in the request; the exchange ends at
    its :class:`Deadline` (``deadline``, once connected)."""

    def __init__(self, target: Target, timeouts: Timeouts) -> None:
        super().__init__(target.host, target.port, timeout=timeouts.exchange)
        self.address, self.timeouts = target.address, timeouts
        self.deadline: Deadline | None = None

    def connect(self) -> None:
        self.sock = self._connected()

    def _connected(self) -> socket.socket:
        sock = _connect(self.address, self.port, self.timeouts)
        self.deadline = Deadline(sock, self.timeouts.exchange)
        return sock


class PinnedHTTPSConnection(PinnedHTTPConnection):
    """Connects to ``address``; TLS verifies the certificate for ``host`` (SNI too), its
    handshake within the exchange's deadline."""

    def __init__(self, target: Target, timeouts: Timeouts) -> None:
        super().__init__(target, timeouts)
        self.tls = ssl.create_default_context()

    def connect(self) -> None:
        self.sock = self.tls.wrap_socket(self._connected(), server_hostname=self.host)


def post(target: Target, body: bytes, headers: dict[str, str], timeouts: Timeouts) -> Outcome:
    """POST ``body``; an error (refused, reset, timeout, TLS) is an outcome without status,
    and so is an exchange that its deadline ended, whatever it had read."""
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
        outcome = Outcome(response.status, text[:EXCERPT_CHARACTERS])
    except (OSError, http.client.HTTPException) as exc:
        if isinstance(exc, ConnectTimeout):
            reason = "connecting timed out"
        elif isinstance(exc, TimeoutError):
            reason = "timed out"
        else:
            reason = type(exc).__name__
        outcome = Outcome(None, f"No answer: {reason}"[:EXCERPT_CHARACTERS])
    finally:
        connection.close()  # (http.client closes it itself before an answer that closes)
        if connection.deadline is not None:
            connection.deadline.cancel()
    if connection.deadline is not None and connection.deadline.passed:
        return Outcome(None, "No answer: timed out")
    return outcome

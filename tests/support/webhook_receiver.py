"""A webhook receiver on loopback for the tests: a real HTTP server in a thread that
keeps every request it gets and answers as the test says (a status, a hang, a redirect,
an answer trickled a byte at a time).

Used in-process by tests/test_webhooks.py and as the receiver of the live fault test
(tests/test_webhooks_live.py), where a worker process delivers to it. Beside it, the
endpoints that hold a sender up: one that accepts and never answers, and one that never
lets a connection complete.
"""

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.support import HOST


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float
    #: How the receiver answered it (a hang or an error is no acceptance).
    behaviour: "Behaviour | None" = None


@dataclass
class Behaviour:
    """How the receiver answers now: ``status`` (with ``location`` for a redirect),
    after ``delay`` seconds; ``body`` as the answer's body; with ``trickle``, the answer
    a byte at a time, this many seconds apart (each read gets a byte in time)."""

    status: int = 204
    delay: float = 0.0
    location: str | None = None
    body: bytes = b""
    trickle: float = 0.0


@dataclass
class Receiver:
    url: str
    behaviour: Behaviour = field(default_factory=Behaviour)
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answered(self) -> list[Received]:
        with self.lock:
            return list(self.received)


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            behaviour = receiver.behaviour
            with receiver.lock:
                receiver.received.append(
                    Received(
                        self.path,
                        {k.lower(): v for k, v in self.headers.items()},
                        body,
                        time.time(),
                        behaviour,
                    )
                )
            if behaviour.delay:
                time.sleep(behaviour.delay)
            if behaviour.trickle:
                self.trickle(behaviour)
                return
            try:
                self.send_response(behaviour.status)
                if behaviour.location:
                    self.send_header("Location", behaviour.location)
                self.send_header("Content-Length", str(len(behaviour.body)))
                self.end_headers()
                self.wfile.write(behaviour.body)
            except OSError:  # the sender gave up (its timeout) before the answer
                pass

        def trickle(self, behaviour: Behaviour) -> None:
            head = f"HTTP/1.1 {behaviour.status} Slow\r\nContent-Length: {len(behaviour.body)}"
            answer = f"{head}\r\n\r\n".encode() + behaviour.body
            self.close_connection = True
            try:
                for byte in answer:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(behaviour.trickle)
            except OSError:  # the sender gave up
                pass

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


class ReceiverServer:
    """The receiver's server, which a test may stop (the receiver is down) and start
    again on the same port, keeping what it received."""

    def __init__(self, port: int = 0) -> None:
        self.receiver = Receiver(url="")
        self.port = port
        self.server: ThreadingHTTPServer | None = None

    def start(self) -> Receiver:
        server = ThreadingHTTPServer((HOST, self.port), _handler(self.receiver))
        server.daemon_threads = True
        self.port = server.server_address[1]
        self.receiver.url = f"http://{HOST}:{self.port}/hook"
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.server = server
        return self.receiver

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


@contextmanager
def running_receiver(port: int = 0) -> Iterator[Receiver]:
    """A receiver on ``HOST`` (a free port unless ``port``), stopped on exit."""
    server = ReceiverServer(port)
    try:
        yield server.start()
    finally:
        server.stop()


class HangingReceiver:
    """A receiver that accepts every connection and never answers (nor reads): an
    attempt to it waits for its read timeout. Counts the connections it accepted."""

    def __init__(self) -> None:
        self.listener = socket.create_server((HOST, 0), backlog=128)
        self.url = f"http://{HOST}:{self.listener.getsockname()[1]}/hook"
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed
                return
            self.held.append(connection)

    def connections(self) -> int:
        return len(self.held)

    def close(self) -> None:
        self.listener.close()
        for connection in self.held:
            connection.close()


@contextmanager
def hanging_receiver() -> Iterator[HangingReceiver]:
    receiver = HangingReceiver()
    try:
        yield receiver
    finally:
        receiver.close()


@contextmanager
def unreachable_url() -> Iterator[str]:
    """A URL on ``HOST`` where a connection never completes, as behind a firewall that
    drops packets: the port's accept queue (one place) is full and never emptied, so the
    kernel drops the new connections' SYNs."""
    listener = socket.create_server((HOST, 0), backlog=0)
    filler = socket.create_connection(listener.getsockname()[:2])
    try:
        yield f"http://{HOST}:{listener.getsockname()[1]}/hook"
    finally:
        filler.close()
        listener.close()

"""Web origins of their own for the browser tests of embed.js: a customer site (or an
attacker's) on a loopback port, beside the live server (the analytics host).

Each :class:`Origin` is a real HTTP server in a thread. It serves the pages the test
gives it, a copy of the app's ``embed.js`` at the path the app's static files have (as a
customer site serves its own copy), and a token endpoint, ``POST /embed-token``, the site's backend:
it answers what the test's ``backend`` function returns, and counts the asks.
"""

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.support import HOST, ROOT
from tests.support.http import call_api

EMBED_JS = ROOT / "usergroups" / "static" / "usergroups" / "embed.js"
EMBED_JS_PATH = "/static/usergroups/embed.js"

# (status, body): what a backend answers the page's script.
Answer = tuple[int, bytes]


def no_backend() -> Answer:
    return 404, b'{"error": "not_found"}'


@dataclass
class Origin:
    url: str = ""
    pages: dict[str, str] = field(default_factory=dict)
    backend: Callable[[], Answer] = no_backend
    #: An origin allowed to call the token endpoint from its pages (CORS), if any.
    cors_origin: str | None = None
    asks: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _handler(origin: Origin) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def answer(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            if origin.cors_origin:
                self.send_header("Access-Control-Allow-Origin", origin.cors_origin)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            path = self.path.partition("?")[0]
            if path == EMBED_JS_PATH:
                self.answer(200, EMBED_JS.read_bytes(), "text/javascript")
            elif path in origin.pages:
                self.answer(200, origin.pages[path].encode(), "text/html; charset=utf-8")
            else:
                self.answer(404, b"not found", "text/plain")

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path != "/embed-token":
                self.answer(404, b"not found", "text/plain")
                return
            with origin.lock:
                origin.asks += 1
            status, body = origin.backend()
            self.answer(status, body, "application/json")

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@contextmanager
def running_origin() -> Iterator[Origin]:
    """An origin ``http://127.0.0.1:<free port>``, stopped on exit."""
    origin = Origin()
    server = ThreadingHTTPServer((HOST, 0), _handler(origin))
    server.daemon_threads = True
    origin.url = f"http://{HOST}:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield origin
    finally:
        server.shutdown()
        server.server_close()


def json_answer(status: int, body: object) -> Answer:
    return status, json.dumps(body).encode()


def minting_backend(host: str, api_key: str, body: dict, shown_expires_in: int | None = None):
    """A customer backend that mints through the host's API (``POST /api/user/embed-token``
    with ``body``) and passes the answer on, refusals included; ``shown_expires_in``
    replaces the ``expires_in`` it tells the page (the token itself keeps its own)."""

    def backend() -> Answer:
        status, answer = call_api(host, api_key, "POST", body, path="/api/user/embed-token")
        if status == 200 and shown_expires_in is not None:
            answer["expires_in"] = shown_expires_in
        return json_answer(status, answer)

    return backend

"""Bodies sent with ``Transfer-Encoding: chunked`` (CONTRACT.md section 3, "Hardening
rules", and 8a): read when the server de-chunks them, refused with 411 ``length_required``
when it cannot, and never taken for an empty body. Over ``MAX_BODY_BYTES`` is 413 either
way; malformed chunk framing is 400 ``invalid``, in JSON, on every endpoint.

The requests are written by hand on a raw socket, chunk framing included: an HTTP library
would choose the framing itself. gunicorn de-chunks (and says so with
``wsgi.input_terminated``); so does an ASGI server, which hands Django the body in
messages. Django's own server (wsgiref, as under ``runserver`` and pytest-django's
``live_server``) does not, nor does the test client with the header set.
"""

import asyncio
import http.client
import io
import json
import socket
import threading

import pytest
from asgiref.sync import async_to_sync
from django.core.handlers.asgi import ASGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import RequestFactory, override_settings

from tests.support import HOST
from tests.support.api import API_URL, assert_error, send
from tests.support.db_state import database_unchanged
from tests.support.deployment import migrated_site
from tests.support.factories import APIKeyFactory, UserGroupFactory
from tests.support.gunicorn import Gunicorn
from usergroups.api.views import UserGroupView
from usergroups.models import UserGroup

MiB = 1024 * 1024
TIMEOUT = 20


def chunked_request(
    port: int,
    method: str,
    path: str,
    body: bytes,
    key: str,
    chunk_size: int = 7,
    content_type: str = "application/json",
    framing: bytes | None = None,
    transfer_encodings: tuple[str, ...] = ("chunked",),
) -> tuple[int, dict, dict]:
    """Send ``body`` in chunks of ``chunk_size`` bytes, no Content-Length; the answer's
    status, headers and JSON. The body goes from a thread while the answer is read, so a
    server that answers before reading it all (413) is heard. ``framing`` is sent instead
    of the chunks of ``body``, as given, and then the sending side is closed: what comes
    after it is the end of the body. Each of ``transfer_encodings`` is a header line."""
    sock = socket.create_connection((HOST, port), timeout=TIMEOUT)
    codings = "".join(f"Transfer-Encoding: {value}\r\n" for value in transfer_encodings)
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
        f"Authorization: Token {key}\r\nContent-Type: {content_type}\r\n"
        f"{codings}Connection: close\r\n\r\n"
    )

    def send_body() -> None:
        try:
            sock.sendall(head.encode("ascii"))
            if framing is not None:
                sock.sendall(framing)
                sock.shutdown(socket.SHUT_WR)
                return
            for start in range(0, len(body), chunk_size):
                piece = body[start : start + chunk_size]
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            sock.sendall(b"0\r\n\r\n")
        except OSError:  # the server answered and closed before reading everything
            pass

    sender = threading.Thread(target=send_body)
    sender.start()
    try:
        response = http.client.HTTPResponse(sock, method=method)
        response.begin()
        raw = response.read()
        headers = {name.lower(): value for name, value in response.getheaders()}
    finally:
        sender.join(TIMEOUT)
        sock.close()
    return response.status, headers, json.loads(raw)


def as_json(value) -> bytes:
    return json.dumps(value).encode()


# --- A server that de-chunks: gunicorn ----------------------------------------------------


@pytest.fixture(scope="module")
def gunicorn(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("chunked")
    env, key = migrated_site(f"sqlite:///{tmp / 'db.sqlite3'}", "chunked")
    with Gunicorn(env, tmp / "gunicorn.log", 2) as server:
        server.key = key
        yield server
    assert "Traceback" not in server.log(), server.log()[-3000:]


@pytest.mark.live
def test_chunked_create_reads_the_body(gunicorn):
    body = as_json({"user_group_id": "chunked-1", "name": "Chunked", "mapping": {"s": "d"}})
    status, headers, answer = chunked_request(gunicorn.port, "GET", API_URL, body, gunicorn.key)

    assert status == 200, answer
    assert headers["content-type"] == "application/json"
    assert answer["new_user_group"] is True
    group = answer["user_group"]
    assert (group["provided_id"], group["name"], group["mapping"]) == (
        "chunked-1",
        "Chunked",
        {"s": "d"},
    )
    # The same body again finds the group: it was read, not guessed.
    status, _, again = chunked_request(gunicorn.port, "GET", API_URL, body, gunicorn.key)
    assert (status, again["new_user_group"], again["user_group"]["token"]) == (
        200,
        False,
        group["token"],
    )


@pytest.mark.live
def test_chunked_body_wins_over_the_query_string(gunicorn):
    body = as_json({"user_group_id": "from-body"})
    path = f"{API_URL}?user_group_id=from-query"
    status, _, answer = chunked_request(gunicorn.port, "GET", path, body, gunicorn.key)

    assert status == 200, answer
    assert answer["user_group"]["provided_id"] == "from-body"


@pytest.mark.live
def test_chunked_body_over_the_limit_is_413(gunicorn):
    body = as_json({"user_group_id": "too-large", "name": "x" * (2 * MiB)})
    status, _, answer = chunked_request(
        gunicorn.port, "GET", API_URL, body, gunicorn.key, chunk_size=64 * 1024
    )

    assert status == 413, answer
    assert answer == {
        "success": 0,
        "error": {"code": "request_too_large", "message": answer["error"]["message"]},
    }
    # Nothing was made of it.
    body = as_json({"user_group_id": "too-large-probe"})
    status, _, answer = chunked_request(gunicorn.port, "GET", API_URL, body, gunicorn.key)
    assert status == 200 and answer["new_user_group"] is True


@pytest.mark.live
def test_every_operation_reads_a_chunked_body(gunicorn):
    """Rotate, update and delete take their bodies chunked as well."""
    port, key = gunicorn.port, gunicorn.key
    _, _, created = chunked_request(port, "GET", API_URL, as_json({"user_group_id": "ops"}), key)
    token = created["user_group"]["token"]

    status, _, rotated = chunked_request(
        port, "POST", API_URL, as_json({"current_token": token}), key
    )
    assert status == 200, rotated
    assert rotated["user_group"]["token"] != token

    update = {"user_group_id": "ops", "new_user_group_id": "ops-2", "name": "Renamed"}
    status, _, updated = chunked_request(port, "PUT", API_URL, as_json(update), key)
    assert status == 200, updated
    assert (updated["user_group"]["provided_id"], updated["user_group"]["name"]) == (
        "ops-2",
        "Renamed",
    )

    status, _, deleted = chunked_request(
        port, "DELETE", API_URL, as_json({"user_group_id": "ops-2"}), key
    )
    assert status == 200, deleted
    assert deleted["user_group"]["provided_id"] == "ops-2"


@pytest.mark.live
def test_chunked_body_that_is_not_json_is_415(gunicorn):
    body = b"user_group_id=form-encoded"
    status, _, answer = chunked_request(
        gunicorn.port,
        "GET",
        API_URL,
        body,
        gunicorn.key,
        content_type="application/x-www-form-urlencoded",
    )
    assert status == 415, answer
    assert answer["error"]["code"] == "unsupported_media_type"


# Malformed framing: what gunicorn refuses while the body is read (issue 27, item 3).
MALFORMED_FRAMINGS = {
    "size not hex": b"zz\r\n{}\r\n0\r\n\r\n",
    "negative size": b"-1\r\n{}\r\n0\r\n\r\n",
    "20-digit size": b"ffffffffffffffffffff\r\n{}\r\n0\r\n\r\n",
    "no CRLF after the data": b"2\r\n{}XX0\r\n\r\n",
    "chunk cut short": b"10\r\n{}",
}
# Every endpoint under /api/user, by a method it answers.
ENDPOINTS = [
    ("GET", API_URL),
    ("POST", API_URL),
    ("PUT", API_URL),
    ("DELETE", API_URL),
    ("GET", f"{API_URL}/list"),
    ("POST", f"{API_URL}/embed-token"),
    ("POST", f"{API_URL}/embed-token/introspect"),
    ("POST", f"{API_URL}/embed-token/revoke"),
    ("GET", f"{API_URL}/embed-token/jwks"),
    ("GET", f"{API_URL}/end-user"),
    ("PUT", f"{API_URL}/end-user"),
    ("DELETE", f"{API_URL}/end-user"),
    ("GET", f"{API_URL}/end-user/list"),
    ("GET", f"{API_URL}/audit"),
    ("POST", f"{API_URL}/webhook"),
    ("DELETE", f"{API_URL}/webhook"),
    ("GET", f"{API_URL}/webhook/list"),
]


@pytest.mark.live
@pytest.mark.parametrize("framing", list(MALFORMED_FRAMINGS))
@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
def test_malformed_chunked_framing_is_400(gunicorn, framing, method, path):
    status, headers, answer = chunked_request(
        gunicorn.port, method, path, b"", gunicorn.key, framing=MALFORMED_FRAMINGS[framing]
    )

    assert status == 400, answer
    assert headers["content-type"] == "application/json"
    assert answer == {
        "success": 0,
        "error": {"code": "invalid", "message": "The chunked body is malformed."},
    }


# Transfer codings gunicorn hands over beside chunked (it refuses the others itself): the
# body arrives de-chunked but still in that coding, which the app decodes not (issue 33).
OTHER_CODINGS = {
    "gzip, chunked": ("gzip, chunked",),
    "deflate, chunked": ("deflate, chunked",),
    "identity, chunked": ("identity, chunked",),
    "two headers": ("gzip", "chunked"),
}


@pytest.mark.live
@pytest.mark.parametrize("codings", list(OTHER_CODINGS))
def test_a_coding_other_than_chunked_alone_is_501_and_nothing_is_written(gunicorn, codings):
    """The body is plain JSON labelled gzip: read as it came, it would make a group."""
    body = as_json({"user_group_id": f"coded-{codings}"})
    status, headers, answer = chunked_request(
        gunicorn.port,
        "GET",
        API_URL,
        body,
        gunicorn.key,
        transfer_encodings=OTHER_CODINGS[codings],
    )

    assert status == 501, answer
    assert headers["content-type"] == "application/json"
    assert answer == {
        "success": 0,
        "error": {
            "code": "unsupported_transfer_coding",
            "message": "Only the chunked transfer coding is supported: send the body with "
            "Content-Length, or with Transfer-Encoding: chunked alone.",
        },
    }
    # Nothing was made of it: the same body, chunked alone, makes the group now.
    status, _, answer = chunked_request(gunicorn.port, "GET", API_URL, body, gunicorn.key)
    assert (status, answer["new_user_group"]) == (200, True), answer


# --- The same in process: a WSGI input marked terminated, as gunicorn gives it ----------


def terminated(body: bytes, **extra) -> dict:
    """The environ of a chunked body that the server de-chunked (``wsgi.input_terminated``)."""
    return {
        "wsgi.input": io.BytesIO(body),
        "wsgi.input_terminated": True,
        "HTTP_TRANSFER_ENCODING": "chunked",
        "CONTENT_LENGTH": "",
        **extra,
    }


def test_a_terminated_chunked_body_is_read(api_client):
    body = as_json({"user_group_id": "in-process", "name": "Read"})
    response = send(api_client, "GET", **terminated(body))
    assert response.status_code == 200, response.content
    assert response.json()["user_group"]["name"] == "Read"
    assert UserGroup.objects.filter(provided_id="in-process").exists()


def test_a_terminated_chunked_body_under_a_non_ascii_script_name(api_client):
    """The new request decodes the path from the environ again, as the first one did."""
    body = as_json({"user_group_id": "mounted"})
    script_name = "/ünï".encode().decode("iso-8859-1")  # as WSGI gives it
    response = send(api_client, "GET", **terminated(body, SCRIPT_NAME=script_name))
    assert response.status_code == 200, response.content
    assert response.json()["user_group"]["provided_id"] == "mounted"


@override_settings(USERGROUPS={"MAX_BODY_BYTES": 100})
def test_a_terminated_chunked_body_over_the_limit_is_413(api_client):
    body = as_json({"user_group_id": "too-large", "name": "x" * 200})
    with database_unchanged():
        response = send(api_client, "GET", **terminated(body))
    assert_error(response, 413, "request_too_large")


def test_the_view_reads_the_chunked_body_of_the_request_django_made():
    """Not a copy: what middleware set on the request stays on it."""
    environ = terminated(b'{"a": 1}', CONTENT_TYPE="application/json")
    request = RequestFactory().generic("POST", API_URL, **environ)
    request.session = session = object()
    api_request = UserGroupView().initialize_request(request)
    assert api_request.session is session
    assert api_request.data == {"a": 1}
    assert (request.META["CONTENT_LENGTH"], request.META["HTTP_TRANSFER_ENCODING"]) == (
        "",
        "chunked",
    )


class BrokenFraming(io.RawIOBase):
    """A server's input whose reading fails, as a server's de-chunking does on bad framing."""

    def readinto(self, buffer):
        raise ValueError("invalid chunk size")


def test_a_body_the_server_cannot_de_chunk_is_400(api_client):
    with database_unchanged():
        response = send(api_client, "GET", **terminated(b"", **{"wsgi.input": BrokenFraming()}))
    assert_error(response, 400, "invalid")


class CountedInput(io.BytesIO):
    """A server's input that counts the reads of it."""

    reads = 0

    def read(self, size=-1):
        self.reads += 1
        return super().read(size)


@pytest.mark.parametrize(
    "coding", ["gzip, chunked", "GZIP,chunked", "x-custom, chunked", "chunked, chunked", "gzip"]
)
@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
def test_a_coding_other_than_chunked_alone_is_501_with_nothing_read(
    api_client, coding, method, path
):
    server_input = CountedInput(as_json({"user_group_id": "coded"}))
    with database_unchanged():
        response = send(
            api_client,
            method,
            path=path,
            **terminated(b"", **{"wsgi.input": server_input, "HTTP_TRANSFER_ENCODING": coding}),
        )
    assert_error(response, 501, "unsupported_transfer_coding")
    assert server_input.reads == 0


@pytest.mark.parametrize("coding", ["Chunked", " chunked ", "chunked,", ", chunked"])
def test_chunked_alone_in_any_case_and_list_form_is_read(api_client, coding):
    body = as_json({"user_group_id": "listed"})
    response = send(api_client, "GET", **terminated(body, HTTP_TRANSFER_ENCODING=coding))
    assert response.status_code == 200, response.content
    assert response.json()["user_group"]["provided_id"] == "listed"


# --- A server that cannot de-chunk: 411 ---------------------------------------------------

METHODS = ["GET", "POST", "PUT", "DELETE"]


def valid_body(method: str, group) -> dict:
    return {
        "GET": {"user_group_id": "new-group"},
        "POST": {"current_token": group.token},
        "PUT": {"user_group_id": group.provided_id, "name": "changed"},
        "DELETE": {"user_group_id": group.provided_id},
    }[method]


@pytest.mark.parametrize("method", METHODS)
def test_unreadable_chunked_body_is_411(api_client, group, method):
    """The test client's input is not marked terminated: like runserver, it hands the
    application no body length, so the body cannot be read."""
    with database_unchanged():
        response = send(
            api_client,
            method,
            valid_body(method, group),
            HTTP_TRANSFER_ENCODING="chunked",
            CONTENT_LENGTH="",
        )
    assert_error(response, 411, "length_required")


def test_unreadable_chunked_body_is_not_replaced_by_the_query_string(api_client):
    with database_unchanged():
        response = send(
            api_client,
            "GET",
            {"user_group_id": "from-body"},
            path=f"{API_URL}?user_group_id=from-query",
            HTTP_TRANSFER_ENCODING="chunked",
            CONTENT_LENGTH="",
        )
    assert_error(response, 411, "length_required")


def test_chunked_on_djangos_own_server_is_411(live_server, transactional_db):
    """Django's wsgiref server (runserver, live_server) passes the chunk framing through
    unsized: answered 411 over a real socket, with nothing created."""
    key = APIKeyFactory()
    UserGroupFactory(workspace=key.workspace)
    port = int(live_server.url.rsplit(":", 1)[1])
    body = as_json({"user_group_id": "over-wsgiref"})
    status, headers, answer = chunked_request(port, "GET", API_URL, body, key.key)

    assert status == 411, answer
    assert headers["content-type"] == "application/json"
    assert answer["error"]["code"] == "length_required"
    assert not UserGroup.objects.filter(provided_id="over-wsgiref").exists()


# --- ASGI: the server de-chunks, Django receives the whole body ----------------------------


def asgi_request(key: str, body: bytes, pieces: int = 3) -> tuple[int, dict]:
    """A chunked GET through Django's ASGI handler, as an ASGI server delivers it: the
    ``Transfer-Encoding`` header, no ``Content-Length``, the body in several messages."""
    size = -(-len(body) // pieces)
    messages = [
        {"type": "http.request", "body": body[i : i + size], "more_body": i + size < len(body)}
        for i in range(0, len(body), size)
    ]
    sent = []

    async def receive():
        if messages:
            return messages.pop(0)
        await asyncio.Event().wait()  # no disconnect: the handler stops listening when done

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": API_URL,
        "raw_path": API_URL.encode(),
        "query_string": b"user_group_id=from-query",
        "root_path": "",
        "headers": [
            (b"host", b"testserver"),
            (b"authorization", f"Token {key}".encode()),
            (b"content-type", b"application/json"),
            (b"transfer-encoding", b"chunked"),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    # As Django's own test clients do: the test's connection (and its transaction) is
    # not closed by the handler at the start and end of the request.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        # The handler itself: get_asgi_application() would also run django.setup(),
        # which reconfigures logging under the session's log guard.
        async_to_sync(ASGIHandler())(scope, receive, send)
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    content = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(content)


def test_chunked_body_under_asgi_is_read(api_key):
    status, answer = asgi_request(api_key.key, as_json({"user_group_id": "over-asgi"}))

    assert status == 200, answer
    assert answer["user_group"]["provided_id"] == "over-asgi"
    assert answer["new_user_group"] is True


@override_settings(USERGROUPS={"MAX_BODY_BYTES": 100})
def test_chunked_body_under_asgi_over_the_limit_is_413(api_key):
    body = as_json({"user_group_id": "over-asgi", "name": "x" * 200})
    with database_unchanged():
        status, answer = asgi_request(api_key.key, body)
    assert status == 413, answer
    assert answer["error"]["code"] == "request_too_large"

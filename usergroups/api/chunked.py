"""Bodies sent with ``Transfer-Encoding: chunked``: read, refused with 411, or 400 when
their framing is malformed (CONTRACT sections 3 and 8a). Any other transfer coding
(``gzip, chunked``: gunicorn de-chunks and hands over the gzip coding as it came) is 501,
and nothing is read: the app decodes none.

Django sizes a body by ``Content-Length`` alone: without one the body reads as empty,
so a chunked create would be answered as a request without a body (or from its query
string). A WSGI server that de-chunks (gunicorn) says so with ``wsgi.input_terminated``:
its input ends where the body ends, so it can be read to the end. Under ASGI the server
de-chunks and Django has received the whole body before the view runs. A WSGI server
that does neither (runserver's wsgiref) would hand over the raw chunk framing: 411
``length_required``.

The request stays the one Django made (with all that middleware set on it); only DRF's
request of it reads its body from where the server put it, through DRF's public
``stream``, which DRF's parsers read.
"""

import io
from typing import IO, Any

from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest
from rest_framework.request import Request

from usergroups.conf import usergroups_settings
from usergroups.errors.failures import (
    LengthRequired,
    MalformedBody,
    RequestTooLarge,
    UnsupportedTransferCoding,
)


def transfer_codings(request: HttpRequest) -> list[str]:
    """The codings ``Transfer-Encoding`` lists, in order, lowercased (RFC 9110's list:
    empty elements are none; several headers come joined by commas)."""
    header = request.META.get("HTTP_TRANSFER_ENCODING", "")
    return [
        coding.lower() for coding in (part.strip(" \t") for part in header.split(",")) if coding
    ]


def has_transfer_coding(request: HttpRequest) -> bool:
    """Whether the body has a transfer coding, hence no length known up front: read by
    :class:`ChunkedBodyRequest`, which refuses every coding but ``chunked``."""
    return bool(transfer_codings(request))


def dechunked_input(request: HttpRequest) -> IO[bytes] | HttpRequest | None:
    """Where the server hands over the de-chunked body; None when it does not."""
    if request.META.get("wsgi.input_terminated"):
        return request.META["wsgi.input"]
    if isinstance(request, ASGIRequest):
        return request  # reads the body Django's ASGI handler received
    return None


def read_to_end(stream: IO[bytes] | HttpRequest, limit: int) -> bytes:
    """All of ``stream``; 413 if over ``limit``, 400 if the server cannot de-chunk it."""
    parts, size = [], 0
    while size <= limit:  # a read may return less than asked before the end
        try:
            part = stream.read(limit + 1 - size)
        except Exception as exc:
            # Each server raises its own classes for a bad chunk size, a missing CRLF or
            # a body cut short (gunicorn's InvalidChunkSize, NoMoreData...): the request
            # is malformed, whichever the server.
            raise MalformedBody() from exc
        if not part:
            break
        parts.append(part)
        size += len(part)
    if size > limit:
        raise RequestTooLarge()
    return b"".join(parts)


class ChunkedBodyRequest(Request):
    """DRF's request of a body sent chunked: its parsers read the body the server
    de-chunked, not the empty one Django sizes by the missing ``Content-Length``."""

    def __init__(self, request: HttpRequest, **kwargs: Any) -> None:
        super().__init__(request, **kwargs)
        self.codings = transfer_codings(request)
        self.server_input = dechunked_input(request)
        self.body_read: bytes | None = None

    def read_body(self) -> bytes:
        """The body, read once: 501 for a transfer coding other than ``chunked`` alone
        (nothing read), 411 if the server cannot give it, 413 if over ``MAX_BODY_BYTES``,
        400 ``invalid`` if its chunk framing is malformed."""
        if self.body_read is None:
            if self.codings != ["chunked"]:
                raise UnsupportedTransferCoding()
            if self.server_input is None:
                raise LengthRequired()
            self.body_read = read_to_end(self.server_input, usergroups_settings.MAX_BODY_BYTES)
        return self.body_read

    @property
    def stream(self) -> IO[bytes] | None:
        body = self.read_body()
        return io.BytesIO(body) if body else None  # as DRF has an empty body: no stream

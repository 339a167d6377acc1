"""Bodies sent with ``Transfer-Encoding: chunked``: read, or refused with 411.

Django sizes a body by ``Content-Length`` alone: without one the body reads as empty,
so a chunked create would be answered as a request without a body (or from its query
string). A WSGI server that de-chunks (gunicorn) says so with ``wsgi.input_terminated``:
its input ends where the body ends, so it can be read to the end. Under ASGI the server
de-chunks and Django has received the whole body before the view runs. A WSGI server
that does neither (runserver's wsgiref) would hand over the raw chunk framing: 411
``length_required``.
"""

import io

from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest
from rest_framework.request import Request

from usergroups.api.exceptions import LengthRequired, RequestTooLarge
from usergroups.conf import usergroups_settings


def is_chunked(request: HttpRequest) -> bool:
    """Whether the body has a transfer coding, hence no length known up front."""
    coding = request.META.get("HTTP_TRANSFER_ENCODING", "").strip().lower()
    return coding not in ("", "identity")


def read_chunked_body(request: HttpRequest, limit: int) -> bytes:
    """The de-chunked body; 411 if the server cannot give it, 413 if over ``limit``."""
    if request.META.get("wsgi.input_terminated"):
        stream = request.META["wsgi.input"]
    elif isinstance(request, ASGIRequest):
        stream = request  # reads the body Django's ASGI handler received
    else:
        raise LengthRequired()
    parts, size = [], 0
    while size <= limit:  # a read may return less than asked before the end
        part = stream.read(limit + 1 - size)
        if not part:
            break
        parts.append(part)
        size += len(part)
    if size > limit:
        raise RequestTooLarge()
    return b"".join(parts)


class ChunkedBodyRequest(Request):
    """DRF's request, with a chunked body read here instead of taken for empty."""

    # DRF's own hook for reading the body (private: tests/test_chunked.py pins it).
    def _load_stream(self) -> None:
        if not is_chunked(self._request):
            return super()._load_stream()  # type: ignore[misc]
        body = read_chunked_body(self._request, usergroups_settings.MAX_BODY_BYTES)
        # None, as DRF sets it, for an empty body (its stubs type the attribute as a stream).
        self._stream = io.BytesIO(body) if body else None  # type: ignore[assignment]

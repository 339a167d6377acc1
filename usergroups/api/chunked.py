"""Bodies sent with ``Transfer-Encoding: chunked``: read, or refused with 411.

Django sizes a body by ``Content-Length`` alone: without one the body reads as empty,
so a chunked create would be answered as a request without a body (or from its query
string). A WSGI server that de-chunks (gunicorn) says so with ``wsgi.input_terminated``:
its input ends where the body ends, so it can be read to the end. Under ASGI the server
de-chunks and Django has received the whole body before the view runs. A WSGI server
that does neither (runserver's wsgiref) would hand over the raw chunk framing: 411
``length_required``.

The body read, the view gets a new request of the same kind with that body and its
``Content-Length``, made the way the handlers make one: Django and DRF then read it as
any sized body, through their public constructors only.
"""

import io

from django.core.handlers.asgi import ASGIRequest
from django.core.handlers.wsgi import WSGIRequest
from django.http import HttpRequest

from usergroups.api.exceptions import LengthRequired, RequestTooLarge
from usergroups.conf import usergroups_settings

#: What middleware and the URL resolver set on a request, kept on the new one.
CARRIED_ATTRIBUTES = ("user", "auser", "session", "resolver_match")


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


def with_chunked_body(request: HttpRequest) -> HttpRequest:
    """A copy of ``request`` whose body is its de-chunked body, sized by
    ``Content-Length``; 411 or 413 as :func:`read_chunked_body`."""
    body = read_chunked_body(request, usergroups_settings.MAX_BODY_BYTES)
    sized: HttpRequest
    if isinstance(request, ASGIRequest):
        headers = [
            (name, value)
            for name, value in request.scope["headers"]
            if name.lower() not in (b"transfer-encoding", b"content-length")
        ]
        headers.append((b"content-length", str(len(body)).encode("ascii")))
        sized = ASGIRequest({**request.scope, "headers": headers}, io.BytesIO(body))
    else:
        environ = {**request.META, "wsgi.input": io.BytesIO(body)}
        environ["CONTENT_LENGTH"] = str(len(body))
        environ.pop("HTTP_TRANSFER_ENCODING", None)
        # WSGIRequest decoded these from WSGI's Latin-1 form in place: back to it, as
        # the new request decodes them again.
        for name in ("PATH_INFO", "SCRIPT_NAME"):
            environ[name] = environ[name].encode("utf-8").decode("iso-8859-1")
        sized = WSGIRequest(environ)
    for name in CARRIED_ATTRIBUTES:
        if hasattr(request, name):
            setattr(sized, name, getattr(request, name))
    return sized

"""The query string, percent-decoded as strict UTF-8 (CONTRACT section 3, "Hardening rules").

What the public road lacks: DRF's ``request.query_params`` is Django's ``request.GET``, a
``QueryDict``, which decodes with ``parse_qsl``'s ``errors="replace"`` and takes no other:
``caf%E9`` and ``caf%E8`` both become ``"caf\\ufffd"``, so two different ids would name one
group (and a U+FFFD sent as such cannot be told from a replaced byte). Every view that
reads the query string goes through :func:`query_params` instead.
"""

from urllib.parse import unquote_to_bytes

from django.conf import settings
from django.core.exceptions import TooManyFieldsSent
from django.http import HttpRequest
from django.utils.datastructures import MultiValueDict
from django.utils.translation import gettext_lazy as _
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request

NOT_UTF8 = _("Must be percent-encoded UTF-8.")


def query_params(request: HttpRequest | Request) -> MultiValueDict[str, str]:
    """The request's query parameters as ``request.GET`` has them (``+`` is a space, a
    name without ``=`` has an empty value, ``getlist`` gives repeats), but refused with
    400 ``invalid`` naming each field whose name or value is not UTF-8."""
    text = request.META.get("QUERY_STRING", "")
    # WSGI hands the bytes over as Latin-1 text; Django's ASGI handler has decoded them
    # as UTF-8 already (refusing what is not). Either way, back to the bytes sent. An
    # ASGI request has the connection's ``scope`` (DRF's Request passes it through).
    encoding = "utf-8" if isinstance(getattr(request, "scope", None), dict) else "iso-8859-1"
    return parse_query_string(text.encode(encoding))


def parse_query_string(raw: bytes) -> MultiValueDict:
    """Parse ``raw``, the query string as the bytes the client sent."""
    params: MultiValueDict = MultiValueDict()
    if not raw:
        return params
    pairs = raw.split(b"&")
    limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
    if limit is not None and len(pairs) > limit:
        # As request.GET does; answered 400 parse_error.
        raise TooManyFieldsSent("The number of GET/POST parameters exceeded the limit.")
    errors: dict[str, list[str]] = {}
    for pair in pairs:
        if not pair:
            continue
        raw_name, _separator, raw_value = pair.partition(b"=")
        try:
            name = _decode(raw_name)
        except UnicodeDecodeError:
            # Named as sent: the name cannot be shown decoded.
            errors[raw_name.decode("ascii", "backslashreplace")] = [str(NOT_UTF8)]
            continue
        try:
            params.appendlist(name, _decode(raw_value))
        except UnicodeDecodeError:
            errors[name] = [str(NOT_UTF8)]
    if errors:
        raise ValidationError(errors)
    return params


def _decode(part: bytes) -> str:
    return unquote_to_bytes(part.replace(b"+", b" ")).decode("utf-8")

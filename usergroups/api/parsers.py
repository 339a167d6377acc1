"""Strict JSON: RFC 8259 only, bounded in size and depth, an object at the top."""

import json
from collections.abc import Mapping
from typing import IO, Any

from django.utils.translation import gettext_lazy as _
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser

from usergroups.conf import usergroups_settings
from usergroups.errors.failures import RequestTooLarge
from usergroups.validators import json_depth


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def loads_strict(text: str | bytes, max_depth: int) -> Any:
    """Parse JSON as RFC 8259 has it: no NaN or Infinity, UTF-8, at most ``max_depth`` deep.

    Raises ``ValueError`` with a short reason. Python's parser recurses, so very deep
    input raises RecursionError; that is bad input too, never a server error.
    """
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        value = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise ValueError(_("JSON is nested too deep."))
    except UnicodeDecodeError:
        raise ValueError(_("JSON must be encoded as UTF-8."))
    except ValueError as exc:
        raise ValueError(_("Invalid JSON: %(reason)s") % {"reason": exc})
    if json_depth(value) > max_depth:
        raise ValueError(_("JSON is nested too deep."))
    return value


def max_body_depth() -> int:
    # ``properties`` sits one level below the body object.
    return usergroups_settings.MAX_PROPERTIES_DEPTH + 1


class JSONObjectParser(BaseParser):
    """DRF parser for request bodies: 413 when too large, 400 ``parse_error`` otherwise."""

    media_type = "application/json"

    def parse(
        self,
        stream: IO[bytes],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        limit = usergroups_settings.MAX_BODY_BYTES
        request = (parser_context or {}).get("request")
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0) if request else 0
        except ValueError:
            declared = 0
        if declared > limit:
            raise RequestTooLarge()
        body = stream.read(limit + 1)
        if len(body) > limit:
            raise RequestTooLarge()
        try:
            value = loads_strict(body, max_body_depth())
        except ValueError as exc:
            raise ParseError(str(exc))
        if not isinstance(value, dict):
            raise ParseError(_("The body must be a JSON object."))
        return value

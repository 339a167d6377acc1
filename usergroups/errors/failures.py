"""The contract's failure body, ``{"success": 0, "error": {"code", "message"}}``, in one
place for the API's exception handler and for the refusals raised in a host's views; and
the app's own failures, each with its status and code."""

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions, status


class ContractFailure(exceptions.APIException):
    """An exception whose ``detail`` is the contract's failure body, code included.

    DRF's default exception handler answers a dict ``detail`` as the body, so a refusal
    raised in a host's view (an embed token's, :mod:`usergroups.auth.embed`) keeps its
    shape and ``code`` under that handler, ours, and any handler built on DRF's.
    """

    def __init__(self, detail: Any = None, code: str | None = None) -> None:
        super().__init__(detail, code)
        self.error_code = code or str(self.default_code)
        self.detail = failure_body(self.error_code, str(self.detail))


def failure_body(code: str, message: str, fields: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{"success": 0, "error": {"code", "message"[, "fields"]}}``."""
    error: dict[str, Any] = {"code": code, "message": message}
    if fields is not None:
        error["fields"] = fields
    return {"success": 0, "error": error}


class CredentialsMissing(ContractFailure, exceptions.NotAuthenticated):
    """401 ``not_authenticated`` of a host's view that no authentication class let in: the
    contract's body under any exception handler (DRF's ``NotAuthenticated`` answers
    ``{"detail": ...}`` under DRF's own), and, being DRF's ``NotAuthenticated``, the
    ``WWW-Authenticate`` of the view's first authentication class."""


class RequestTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = _("The request body is too large.")
    default_code = "request_too_large"


class LengthRequired(exceptions.APIException):
    """A chunked body this server hands over unsized, so it cannot be read (usergroups.api.chunked)."""

    status_code = status.HTTP_411_LENGTH_REQUIRED
    default_detail = _("This server cannot read a chunked body; send Content-Length.")
    default_code = "length_required"


class UnsupportedTransferCoding(exceptions.APIException):
    """A body sent with a transfer coding other than ``chunked`` alone (``gzip, chunked``):
    the app decodes none, so it reads nothing rather than misread it (RFC 9112 section 6.1)."""

    status_code = status.HTTP_501_NOT_IMPLEMENTED
    default_detail = _(
        "Only the chunked transfer coding is supported: send the body with Content-Length, "
        "or with Transfer-Encoding: chunked alone."
    )
    default_code = "unsupported_transfer_coding"


class MalformedBody(exceptions.APIException):
    """A chunked body whose framing the server could not read: a bad chunk size, a missing
    CRLF after a chunk, a body cut short (usergroups.api.chunked)."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = _("The chunked body is malformed.")
    default_code = "invalid"


class TokenUnavailable(exceptions.APIException):
    """The group's token was sealed with a secret this server no longer has."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = _("The token of this user group cannot be shown; rotate it.")
    default_code = "token_unavailable"


class Conflict(exceptions.APIException):
    """The request conflicts with what is stored: a delete of a group that has children."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the stored state."
    default_code = "conflict"


class ServiceUnavailable(exceptions.APIException):
    """The database failed mid-request: connection lost, lock timeout, deadlock."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = _("The database is unavailable; try again.")
    default_code = "service_unavailable"
    wait = 1  # seconds, sent as Retry-After

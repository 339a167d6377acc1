"""Every failure of the API as ``{"success": 0, "error": {"code", "message", "fields"}}``:
the exception handler of the app's views, for a host's views too."""

from typing import Any, cast

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.db import InterfaceError, InternalError, OperationalError
from django.http import Http404
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from usergroups.errors.failures import (
    ContractFailure,
    RequestTooLarge,
    ServiceUnavailable,
    failure_body,
)
from usergroups.logs import get_logger

logger = get_logger(__name__)


def _as_api_exception(exc: Exception) -> exceptions.APIException | None:
    if isinstance(exc, exceptions.APIException):
        return exc
    if isinstance(exc, OperationalError | InterfaceError | InternalError):
        # Failures of the database, not of the request: worth a retry. InternalError is
        # here for a connection whose server side was cut under a pooler (psycopg:
        # "received 2 results from command 'BEGIN'" behind PgBouncer). IntegrityError
        # and DataError are not: races are settled in services, so those are bugs.
        # The class and first line name the failure; the message holds no secret.
        logger.warning(
            "Database failure answered 503: %s: %s",
            type(exc).__name__,
            str(exc).strip().split("\n", 1)[0],
        )
        return ServiceUnavailable()
    if isinstance(exc, Http404):
        return exceptions.NotFound()
    if isinstance(exc, DjangoPermissionDenied):
        return exceptions.PermissionDenied()
    if isinstance(exc, RequestDataTooBig):
        return RequestTooLarge()
    if isinstance(exc, SuspiciousOperation):  # e.g. too many query string fields
        return exceptions.ParseError(_("The request could not be read."))
    return None


def _messages(detail: Any) -> list[str]:
    if isinstance(detail, dict):
        return [message for value in detail.values() for message in _messages(value)]
    if isinstance(detail, list):
        return [message for item in detail for message in _messages(item)]
    return [str(detail)]


def error_body(api_exc: exceptions.APIException) -> dict[str, Any]:
    """The contract's failure body of ``api_exc``."""
    if isinstance(api_exc, ContractFailure):
        return api_exc.detail  # type: ignore[return-value]
    if isinstance(api_exc, exceptions.ValidationError):
        detail = api_exc.detail
        if not isinstance(detail, dict):
            detail = {"non_field_errors": detail}
        fields = {name: _messages(value) for name, value in detail.items()}
        return failure_body(str(api_exc.default_code), str(_("Invalid input.")), fields)
    return failure_body(str(api_exc.default_code), " ".join(_messages(api_exc.detail)))


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Shape a failure as the contract's error body; None lets Django answer a real bug.

    DRF's handler makes the answer: its headers (``WWW-Authenticate``, ``Retry-After``),
    and ``set_rollback()``, so that under ``ATOMIC_REQUESTS`` a refused request writes
    nothing. Only the body is ours.
    """
    api_exc = _as_api_exception(exc)
    if api_exc is None:
        return None
    # DRF's handler answers every APIException (None is for other exceptions).
    response = cast(Response, drf_exception_handler(api_exc, context))
    response.data = error_body(api_exc)
    wait = getattr(api_exc, "wait", None)
    if wait:  # DRF rounds down, and a wait under a second is still one
        response["Retry-After"] = str(int(wait) or 1)
    return response

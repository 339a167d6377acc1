"""Plain requests of the API's hottest endpoints, answered without DRF's dispatch: the
get of ``/api/user`` (every dashboard render) and the mint of an embed token (every
embedded view), each with a plain JSON body (:class:`usergroups.api.views.FastPathView`).

DRF's dispatch builds a request wrapper, parser, negotiator and renderer objects and a
template response for each; here the same steps run directly: the API key's
authentication class, the scope the method needs, strict JSON, the view's short way of
validating (the one its serializer uses for valid input), the view's answer (the same
service call as on the DRF path), DRF's JSON renderer. Nothing is cached: the key and
the group are read from the database on every request, as on the DRF path.

Anything else goes DRF's way, so every error keeps DRF's exact envelope and headers:
:func:`answer` returns None before it has read anything (another method, another body
type, throttling on, a subclass of the view), and hands over to DRF's dispatch with
what it learnt (:class:`Handover`) once it has: the outcome of the authentication (so
the key is looked up once), and, after the view's answer ran, its exception. DRF then
answers exactly as if it had run every step itself (a key without the scope, input
that is not valid: DRF's own checks answer). tests/test_fast_path.py compares the two
paths' answers byte for byte.
"""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.views.decorators.debug import sensitive_variables
from rest_framework.authentication import BaseAuthentication
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request

from usergroups.api.parsers import loads_strict, max_body_depth
from usergroups.conf import usergroups_settings

if TYPE_CHECKING:
    from usergroups.api.views import FastPathView

JSON = "application/json"
_renderer = JSONRenderer()


class SettledAuthentication(BaseAuthentication):
    """An authentication the fast path already ran: gives its outcome (the user and key,
    or the exception) to DRF, without a second lookup or log line."""

    def __init__(self, authenticator: BaseAuthentication, outcome: Any) -> None:
        self.authenticator, self.outcome = authenticator, outcome

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome

    def authenticate_header(self, request: Request) -> str | None:
        return self.authenticator.authenticate_header(request)


@dataclass
class Handover:
    """What the fast path settled before handing a request over to DRF's dispatch."""

    authenticators: list[BaseAuthentication] = field(default_factory=list)
    error: Exception | None = None  # raised by the view's handler, for DRF to answer


def _plain_json_length(request: HttpRequest) -> int:
    """The length of a body the fast path may read (sized, declared exactly as JSON,
    within both limits), or 0."""
    meta = request.META
    if meta.get("CONTENT_TYPE") != JSON or "HTTP_TRANSFER_ENCODING" in meta:
        return 0
    try:
        length = int(meta.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0
    django_limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if length > usergroups_settings.MAX_BODY_BYTES or (
        django_limit is not None and length > django_limit
    ):
        return 0
    return length


def _authenticate_checking_connection(
    authenticator: BaseAuthentication, request: HttpRequest
) -> tuple[Any, Any] | None:
    """``authenticator.authenticate(request)``; Django's ``CONN_HEALTH_CHECKS`` checks
    the connection before it, as before any query."""
    return authenticator.authenticate(request)  # type: ignore[arg-type]


@sensitive_variables("outcome", "data", "content")
def answer(view: "FastPathView", request: HttpRequest) -> HttpResponseBase | None:
    """The answer to a plain request, or None when DRF must answer from the start.
    Called by the view's dispatch for its fast method only."""
    if (
        "HTTP_AUTHORIZATION" not in request.META
        or usergroups_settings.THROTTLE_RATE
        or not _plain_json_length(request)
    ):
        return None
    authenticator = view.get_authenticators()[0]
    try:
        outcome: Any = _authenticate_checking_connection(authenticator, request)
    except Exception as exc:  # an authentication failure, or the database's
        outcome = exc
    handover = Handover([SettledAuthentication(authenticator, outcome)])
    if isinstance(outcome, BaseException) or outcome is None:
        return view.hand_over(request, handover)
    request.user, api_key = outcome
    scope = view.required_scopes.get(request.method or "")
    if scope is not None and not api_key.has_scope(scope):  # DRF's HasScope answers
        return view.hand_over(request, handover)
    try:
        data = view.fast_input(loads_strict(request.body, max_body_depth()))
    except ValueError:
        data = None
    if not data:  # not JSON, not valid, or empty: DRF reads it again for its answer
        return view.hand_over(request, handover)
    try:
        content = _renderer.render(view.valid_answer(api_key, data), JSON)
    except Exception as exc:
        handover.error = exc
        return view.hand_over(request, handover)
    response = HttpResponse(content, content_type=JSON)
    for name, value in view.default_response_headers.items():  # as DRF's finalize_response
        response[name] = value
    return response


class CheckingAuthentication(BaseAuthentication):
    """``authenticator``, as the fast path runs it (usergroups/api/views.py wraps each
    authenticator in it; both go with the fast path)."""

    def __init__(self, authenticator: BaseAuthentication) -> None:
        self.authenticator = authenticator

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        return _authenticate_checking_connection(self.authenticator, request)

    def authenticate_header(self, request: Request) -> str | None:
        return self.authenticator.authenticate_header(request)

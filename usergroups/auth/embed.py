"""``Authorization: Embed <token>`` for a host's dashboard endpoints.

A host's view lists :class:`EmbedTokenAuthentication` (and
:class:`usergroups.auth.permissions.HasEmbedToken`); ``request.auth`` is then an
:class:`~usergroups.embed.grant.EmbedGrant`, whose ``variables`` filter the data. A view
may declare the resource it serves, ``embed_resource = "sales"``: a token minted for
another one is refused there.

Everything is checked here, at authentication, so a view cannot forget a check: the
token and what it is bound to (:func:`usergroups.services.verification.grant_of`: no
query when it is bad, one at most when it is good), the ``Origin`` header against the
token's origin, and the view's resource.

Every refusal is the contract's failure body with its ``code`` whatever the site's
``EXCEPTION_HANDLER`` (DRF's default included), and a 401 challenges with
``WWW-Authenticate: Embed error="<code>"``. ``request.user`` is then the token's group as
an authenticated :class:`~usergroups.auth.principal.GroupPrincipal`.
"""

from typing import Any

from django.utils.translation import gettext_lazy as _
from django.views.decorators.debug import sensitive_variables
from rest_framework import status
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request

from usergroups import telemetry
from usergroups.auth.api_key import AuthorizationHeaderAuthentication
from usergroups.auth.principal import GroupPrincipal
from usergroups.embed import tokens
from usergroups.embed.grant import EmbedGrant
from usergroups.embed.origins import same_origin
from usergroups.errors.failures import ContractFailure
from usergroups.services import verification

KEYWORD = "Embed"


class EmbedRefusal(ContractFailure):
    """An embed token refused: the contract's failure body with its ``code`` under any
    exception handler (:class:`~usergroups.errors.failures.ContractFailure`). ``reason``
    says which check refused it, finer than the code, for telemetry only."""

    reason = "invalid"


class EmbedAuthenticationFailed(EmbedRefusal):
    """401 ``authentication_failed``, challenging with ``WWW-Authenticate: Embed
    error="<code>"`` (RFC 6750's form), so the page knows to fetch a new embed token."""

    # Not DRF's AuthenticationFailed: APIView.handle_exception gives that one the view's
    # first authentication class's challenge, or turns it into a 403 when that has none.
    status_code = status.HTTP_401_UNAUTHORIZED
    default_detail = _("Invalid embed token.")
    default_code = "authentication_failed"

    def __init__(
        self, detail: Any = None, code: str | None = None, *, reason: str | None = None
    ) -> None:
        super().__init__(detail, code)
        self.auth_header = f'{KEYWORD} error="{self.error_code}"'  # DRF's handler sends it
        if reason is not None:
            self.reason = reason


class EmbedTokenExpired(EmbedAuthenticationFailed):
    """401 ``token_expired``: the page should fetch a new token and try again."""

    default_detail = _("The embed token has expired.")
    default_code = "token_expired"
    reason = "expired"


class OriginNotAllowed(EmbedRefusal, PermissionDenied):
    default_detail = _("The embed token is locked to another origin.")
    default_code = "origin_not_allowed"
    reason = "origin"


class ResourceNotAllowed(EmbedRefusal, PermissionDenied):
    default_detail = _("The embed token was minted for another resource.")
    default_code = "permission_denied"
    reason = "resource"


def view_resource(request: Request) -> str | None:
    """The ``embed_resource`` the request's view declares, if any."""
    # No public road hands an authentication class its view (resolver_match misses one
    # called without URL routing); DRF's parser context has it, the "view" parsers get.
    view = request.parser_context.get("view")
    resource = getattr(view, "embed_resource", None)
    return resource if isinstance(resource, str) else None


class EmbedTokenAuthentication(AuthorizationHeaderAuthentication):
    """DRF authentication for ``Authorization: Embed <embed token>``; another scheme is
    left to the next class (e.g. ``GroupTokenAuthentication``)."""

    keyword = KEYWORD
    #: What it refuses, by status: the OpenAPI description of a view that lists it says so.
    refusals = {
        401: "`not_authenticated` (no token; `WWW-Authenticate: Embed`), `token_expired` "
        "(fetch a new token and repeat once) or `authentication_failed` (forged, malformed "
        'or revoked); `WWW-Authenticate: Embed error="<code>"`.',
        403: "`origin_not_allowed` (the token is locked to another origin) or "
        "`permission_denied` (minted for another `resource`).",
    }

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        """The principal and grant of the request's embed token, timed and counted
        (:mod:`usergroups.telemetry`); None without one."""
        since = telemetry.started()
        try:
            result = self.verify(request)
        except EmbedRefusal as refusal:
            telemetry.verification_refused(since, refusal.error_code, refusal.reason)
            raise
        except Exception as error:
            telemetry.verification_failed(since, error)
            raise
        if result is not None:
            telemetry.verification_accepted(since, result[1].group.workspace_id)
        return result

    def verify(self, request: Request) -> tuple[GroupPrincipal, EmbedGrant] | None:
        """:meth:`authenticate` without telemetry."""
        result = super().authenticate(request)
        if result is None:
            return None
        grant: EmbedGrant = result[1]
        if grant.origin is not None and not same_origin(
            grant.origin, request.META.get("HTTP_ORIGIN")
        ):
            raise OriginNotAllowed()
        if not grant.allows_resource(view_resource(request)):
            raise ResourceNotAllowed()
        return result

    @sensitive_variables("credential")
    def authenticate_credentials(self, credential: str) -> tuple[GroupPrincipal, EmbedGrant]:
        try:
            grant = verification.grant_of(credential)
        except tokens.ExpiredEmbedToken:
            raise EmbedTokenExpired() from None
        except tokens.OriginRequired:
            raise EmbedAuthenticationFailed(
                _("This embed token names no origin, which this site requires."),
                reason="origin_required",
            ) from None
        except verification.TokenRevoked:
            raise EmbedAuthenticationFailed(
                _("This embed token has been revoked, or its user group deleted."),
                reason="revoked",
            ) from None
        except tokens.InvalidEmbedToken:
            raise EmbedAuthenticationFailed() from None
        return GroupPrincipal.of(grant.group), grant

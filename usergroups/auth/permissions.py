"""DRF permissions: which authentication a view's requests must have passed, and which
scope (:mod:`usergroups.scopes`) their API key must hold.

A host's view guarded by :class:`HasGroupToken` or :class:`HasEmbedToken` refuses a
request that no authentication class let in (no token at all) with the contract's 401
``not_authenticated`` body, whatever the site's exception handler, as the schema of such a
view says (:mod:`usergroups.api.openapi`). Composed with ``|``, it so answers before the
other operand is asked: compose it with permissions that need a token too.

Scopes are checked in one place, :func:`require_scope`: by :class:`HasScope` for the
operations whose scope is known from the method alone, before anything is read, and by
the get-or-create service for GET of ``/api/user``, whose scope depends on whether the
group exists (``read`` if it does, ``write`` if it would be created).
"""

from django.utils.translation import gettext_lazy as _
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from usergroups.embed.grant import EmbedGrant
from usergroups.errors.failures import CredentialsMissing
from usergroups.models import APIKey
from usergroups.records import GroupRecord


class HasAPIKey(BasePermission):
    """Lets a request in only when ``APIKeyAuthentication`` accepted its key."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        return isinstance(request.auth, APIKey)


def refuse_without_credentials(request: Request) -> None:
    """401 :class:`CredentialsMissing` when no authentication class let the request in;
    one that did (a session, another token) is left to the permission's own answer."""
    if request.successful_authenticator is None:
        raise CredentialsMissing()


class HasGroupToken(BasePermission):
    """Lets a request in only when ``GroupTokenAuthentication`` accepted its token
    (``request.auth`` is then the token's :class:`~usergroups.records.GroupRecord`)."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        if isinstance(request.auth, GroupRecord):
            return True
        refuse_without_credentials(request)
        return False


class HasEmbedToken(BasePermission):
    """Lets a request in only when ``EmbedTokenAuthentication`` accepted its embed token
    (``request.auth`` is then an :class:`~usergroups.embed.grant.EmbedGrant`, already
    checked against the view's ``embed_resource`` and the request's origin)."""

    message = _("This needs an embed token.")

    def has_permission(self, request: Request, view: APIView) -> bool:
        if isinstance(request.auth, EmbedGrant):
            return True
        refuse_without_credentials(request)
        return False


def scope_message(scope: str) -> str:
    """The 403's message: it names the scope the key lacks."""
    return _("This API key lacks the '%(scope)s' scope, which this operation needs.") % {
        "scope": scope
    }


class ScopeRequired(PermissionDenied):
    """403 ``permission_denied``: the request's API key lacks ``scope``."""

    def __init__(self, scope: str) -> None:
        super().__init__(scope_message(scope), code="permission_denied")
        self.scope = scope


def require_scope(api_key: APIKey, scope: str) -> None:
    """Raise :class:`ScopeRequired` unless ``api_key`` holds ``scope``.

    The scopes are columns of the key's row, loaded with it: this costs no query.
    """
    if not api_key.has_scope(scope):
        raise ScopeRequired(scope)


class HasScope(BasePermission):
    """The key holds the scope the view names for the request's method.

    A view lists ``required_scopes = {"POST": "rotate", ...}``; a method it leaves out
    has its scope checked later by the view (with :func:`require_scope`). Put after
    :class:`HasAPIKey`, so a request without a key is a 401, never a 403.
    """

    def has_permission(self, request: Request, view: APIView) -> bool:
        scope = getattr(view, "required_scopes", {}).get(request.method or "")
        if scope is None or not isinstance(request.auth, APIKey):
            return True
        require_scope(request.auth, scope)
        return True

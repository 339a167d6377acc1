"""``Authorization: <keyword> <credential>`` authentication, in the style of DRF's
TokenAuthentication: the API key of a workspace here, the group token of a dashboard
in :mod:`usergroups.auth.group_token`.

A host adapts a class by subclassing it, as with DRF's: ``keyword`` is the scheme word,
``lookup`` finds what a credential stands for (None when nothing), and
``authenticate_credentials`` decides what a found one gives.
"""

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.utils.translation import gettext_lazy as _
from django.views.decorators.debug import sensitive_variables
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from usergroups.conf import usergroups_settings
from usergroups.logs import get_logger
from usergroups.models import APIKey
from usergroups.services import keys

logger = get_logger(__name__)


class AuthorizationHeaderAuthentication(BaseAuthentication):
    """Reads ``Authorization: <keyword> <credential>`` (the keyword in any case).

    No header: None, so DRF answers 401 ``not_authenticated``. A header of another
    scheme, or not of two parts: None, left to the next authentication class, unless
    ``refuse_other_schemes``, then 401. Otherwise ``authenticate_credentials`` decides.
    """

    keyword = ""
    refuse_other_schemes = False

    @sensitive_variables("parts", "credential")
    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        if "HTTP_AUTHORIZATION" not in request.META:
            return None
        try:
            parts = get_authorization_header(request).split()
        except UnicodeError:  # a test client's str beyond Latin-1; WSGI never sends one
            parts = []
        if len(parts) != 2 or parts[0].lower() != self.keyword.lower().encode():
            if self.refuse_other_schemes:
                raise AuthenticationFailed(self.header_error())
            return None
        try:
            credential = parts[1].decode("ascii")
        except UnicodeDecodeError:
            credential = ""  # no key or token holds such a byte: the lookup refuses it
        return self.authenticate_credentials(credential)

    def header_error(self) -> str:
        return _("Use the header 'Authorization: %(keyword)s <credential>'.") % {
            "keyword": self.keyword
        }

    def authenticate_credentials(self, credential: str) -> tuple[Any, Any]:
        raise NotImplementedError

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


class APIKeyAuthentication(AuthorizationHeaderAuthentication):
    """Authenticates a workspace's API key; ``request.auth`` is the :class:`APIKey`.

    Unlike DRF's TokenAuthentication, a header with another scheme is refused (401)
    rather than passed over, and keys are looked up by their digest; they are never stored.
    """

    keyword = "Token"
    refuse_other_schemes = True
    lookup: Callable[[str], APIKey | None] = staticmethod(keys.find_api_key)

    def header_error(self) -> str:
        return _("Use the header 'Authorization: %(keyword)s <API key>'.") % {
            "keyword": self.keyword
        }

    @sensitive_variables("credential")
    def authenticate_credentials(self, credential: str) -> tuple[AnonymousUser, APIKey]:
        api_key = self.lookup(credential)
        if api_key is None:
            raise AuthenticationFailed(_("Invalid API key."))
        if api_key.is_revoked:
            logger.info("Refused revoked API key %s", api_key.prefix)
            raise AuthenticationFailed(_("This API key has been revoked."))
        if api_key.is_expired:
            logger.info("Refused expired API key %s", api_key.prefix)
            raise AuthenticationFailed(_("This API key has expired."))
        keys.record_use(api_key, usergroups_settings.KEY_LAST_USED_INTERVAL_SECONDS)
        return AnonymousUser(), api_key

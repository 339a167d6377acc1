"""``Authorization: Token <API key>``: the credential of a workspace."""

import hmac
import logging

from django.contrib.auth.models import AnonymousUser
from django.views.decorators.debug import sensitive_variables
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission

from . import crypto
from .conf import usergroups_settings
from .models import APIKey
from .prepared import PreparedSQL

logger = logging.getLogger(__name__)

KEYWORD = "Token"


@sensitive_variables("key", "key_digest")
def find_api_key(key: str) -> APIKey | None:
    """The key's row, or None. Costs no query unless the key has the right shape.

    The row is found by the key's full digest, never by its prefix: a lookup by prefix
    answers measurably slower when the prefix exists (a row is read, then its digest
    compared), which tells an attacker which prefixes are real. Every well-formed key
    now costs the same single indexed query, whatever its first characters.
    """
    if not crypto.looks_like_api_key(key):
        return None
    key_digest = crypto.digest(key)
    using, rows = _FIND_KEY.fetch([key_digest])
    if not rows:
        return None
    row = APIKey.from_db(using, _KEY_FIELDS, rows[0])
    # The database matched the digest already; comparing again, in constant time, keeps a
    # lenient collation (MariaDB's are case- and pad-insensitive) from accepting a near match.
    if not hmac.compare_digest(row.digest, key_digest):
        return None
    return row


# The whole row, as ``APIKey.objects.get(digest=...)`` would load it, without paying for
# the ORM's query compilation on every request (see prepared.PreparedSQL).
_KEY_FIELDS = [field.attname for field in APIKey._meta.concrete_fields]


def _find_key_sql(quote_name) -> tuple[str, list]:
    fields = list(APIKey._meta.concrete_fields)
    columns = ", ".join(quote_name(field.column) for field in fields)
    digest = quote_name(APIKey._meta.get_field("digest").column)
    return f"SELECT {columns} FROM {quote_name(APIKey._meta.db_table)} WHERE {digest} = %s", fields


_FIND_KEY = PreparedSQL(APIKey, _find_key_sql)


class APIKeyAuthentication(BaseAuthentication):
    """Authenticates a workspace's API key; ``request.auth`` is the :class:`APIKey`.

    Unlike DRF's TokenAuthentication, a header with another scheme is refused (401)
    rather than passed over, and keys are looked up by their digest; they are never stored.
    """

    @sensitive_variables("header", "parts")
    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION")
        if header is None:
            return None
        parts = header.split()
        if len(parts) != 2 or parts[0].lower() != KEYWORD.lower():
            raise AuthenticationFailed("Use the header 'Authorization: Token <API key>'.")
        api_key = find_api_key(parts[1])
        if api_key is None:
            raise AuthenticationFailed("Invalid API key.")
        if api_key.is_revoked:
            logger.info("Refused revoked API key %s", api_key.prefix)
            raise AuthenticationFailed("This API key has been revoked.")
        if api_key.is_expired:
            logger.info("Refused expired API key %s", api_key.prefix)
            raise AuthenticationFailed("This API key has expired.")
        api_key.touch(usergroups_settings.KEY_LAST_USED_INTERVAL_SECONDS)
        return AnonymousUser(), api_key

    def authenticate_header(self, request) -> str:
        return KEYWORD


class HasAPIKey(BasePermission):
    """Lets a request in only when :class:`APIKeyAuthentication` accepted its key."""

    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, APIKey)

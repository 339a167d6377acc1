"""The token's other side: who is looking at an embedded dashboard.

A host's dashboard endpoints receive a group token from the embedding page and turn it
into the :class:`UserGroup` whose properties filter the data.
"""

from django.contrib.auth.models import AnonymousUser
from django.db.models import Q
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed

from . import crypto
from .models import UserGroup

KEYWORD = "GroupToken"


@sensitive_variables("token")
def resolve_group_token(token: object) -> UserGroup | None:
    """The group a token belongs to, or None (unknown, rotated, deleted or malformed).

    A token rotated within ``ROTATION_GRACE_SECONDS`` still resolves. A malformed
    token costs no query; a well-formed one costs one indexed lookup.
    """
    if not crypto.looks_like_group_token(token):
        return None
    digest = crypto.digest(token)
    current = Q(token_digest=digest)
    in_grace = Q(previous_token_digest=digest, previous_token_valid_until__gt=timezone.now())
    return UserGroup.objects.filter(current | in_grace).first()


class GroupTokenAuthentication(BaseAuthentication):
    """DRF authentication for a host's dashboard endpoints: ``Authorization: GroupToken <token>``.

    ``request.auth`` is the :class:`UserGroup`. The token is read from the header only:
    a token in a query string ends up in access logs, browser history and Referer headers.
    """

    @sensitive_variables("header", "parts")
    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION")
        if header is None:
            return None
        parts = header.split()
        if len(parts) != 2 or parts[0].lower() != KEYWORD.lower():
            return None  # another scheme: leave it to the next authentication class
        group = resolve_group_token(parts[1])
        if group is None:
            raise AuthenticationFailed("Invalid or rotated group token.")
        return AnonymousUser(), group

    def authenticate_header(self, request) -> str:
        return KEYWORD

"""DRF permissions: which authentication a view's requests must have passed."""

from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from .models import APIKey
from .records import GroupRecord


class HasAPIKey(BasePermission):
    """Lets a request in only when ``APIKeyAuthentication`` accepted its key."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        return isinstance(request.auth, APIKey)


class HasGroupToken(BasePermission):
    """Lets a request in only when ``GroupTokenAuthentication`` accepted its token
    (``request.auth`` is then the token's :class:`~usergroups.records.GroupRecord`)."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        return isinstance(request.auth, GroupRecord)

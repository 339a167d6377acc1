"""Group-token authentication for a host's dashboard endpoints: who is looking.

A host's dashboard endpoints receive a group token from the embedding page and turn it
into the :class:`~usergroups.records.GroupRecord` whose computed properties (its
ancestors' merged with its own) filter the data and whose computed mapping names the
data source (see :mod:`usergroups.contrib.variables`).
"""

from collections.abc import Callable

from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.views.decorators.debug import sensitive_variables
from rest_framework.exceptions import AuthenticationFailed

from usergroups import crypto
from usergroups.auth.api_key import AuthorizationHeaderAuthentication
from usergroups.auth.principal import GroupPrincipal
from usergroups.conf import usergroups_settings
from usergroups.errors.failures import ContractFailure
from usergroups.records import GroupRecord
from usergroups.services import lineage


@sensitive_variables("token")
def resolve_group_token(token: object) -> GroupRecord | None:
    """The group a token belongs to, or None (unknown, rotated, deleted or malformed).

    A token rotated within ``ROTATION_GRACE_SECONDS`` still resolves. A malformed
    token costs no query; a well-formed one costs one indexed lookup, mapping and
    ancestors included.
    """
    if not crypto.looks_like_group_token(token):
        return None
    digest = crypto.digest(token)
    return lineage.find_group(lineage.BY_TOKEN, digest, digest, timezone.now())


class GroupTokenRefused(ContractFailure, AuthenticationFailed):
    """401 ``authentication_failed``: the contract's body under any exception handler, as
    the schema of a host's view says; DRF adds the view's challenge (``GroupToken``)."""


class GroupTokenAuthentication(AuthorizationHeaderAuthentication):
    """DRF authentication for a host's dashboard endpoints: ``Authorization: GroupToken
    <token>``; ``request.auth`` is the group's :class:`~usergroups.records.GroupRecord`
    (require it with :class:`usergroups.auth.permissions.HasGroupToken`), ``request.user``
    the group as a :class:`~usergroups.auth.principal.GroupPrincipal`.

    ``USERGROUPS["EMBED_ACCEPT_GROUP_TOKENS"] = False`` refuses every group token (401),
    so that only short-lived embed tokens (:mod:`usergroups.embed`) reach the dashboards.

    The token is read from the header only: a token in a query string ends up in access
    logs, browser history and Referer headers. Another scheme is left to the next
    authentication class.
    """

    keyword = "GroupToken"
    #: What it refuses, by status: the OpenAPI description of a view that lists it says so.
    refusals = {
        401: "`not_authenticated` (no token) or `authentication_failed`: not a current group "
        "token (any, when EMBED_ACCEPT_GROUP_TOKENS is false)."
    }
    lookup: Callable[[object], GroupRecord | None] = staticmethod(resolve_group_token)

    @sensitive_variables("credential")
    def authenticate_credentials(self, credential: str) -> tuple[GroupPrincipal, GroupRecord]:
        if not usergroups_settings.EMBED_ACCEPT_GROUP_TOKENS:
            # The host serves its dashboards to embed tokens only: no query, no lookup.
            raise GroupTokenRefused(_("Group tokens are not accepted here; use an embed token."))
        group = self.lookup(credential)
        if group is None:
            raise GroupTokenRefused(_("Invalid or rotated group token."))
        return GroupPrincipal.of(group), group

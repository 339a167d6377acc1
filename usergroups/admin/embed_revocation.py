"""Revoking a group's embed tokens from the admin: a button on the change page and a bulk
action.

Both ask first on a page of their own (POST, CSRF protected), need ``change_usergroup``,
revoke through :func:`usergroups.services.embed.revoke_embed_tokens` (the same as
``POST /api/user/embed-token/revoke``: the group's generation advances, so every embed
token minted before is refused at once, on every process; the ``embed_tokens_revoked``
signal is sent), and record it in the group's history. The group token is left as it is.
"""

from typing import TYPE_CHECKING

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from usergroups.admin.common import object_page_url
from usergroups.admin.confirm import Notice, Question, confirm_object, confirm_selected
from usergroups.models import UserGroup
from usergroups.services import embed

if TYPE_CHECKING:
    EmbedRevocationBase = admin.ModelAdmin[UserGroup]
else:
    EmbedRevocationBase = object


def embed_revocation_question(question: str) -> Question:
    """The confirmation of revoking embed tokens, in the language of the request."""
    return Question(
        title=gettext("Revoke embed tokens?"),
        question=question,
        consequences=[
            gettext(
                "Every embed token minted so far for the group is refused from the moment you "
                "confirm: open dashboards show that their access was revoked."
            ),
            gettext("The group token stays as it is; embed tokens minted afterwards work."),
        ],
        submit_label=gettext("Yes, revoke the embed tokens"),
        danger=True,
    )


class EmbedRevocationMixin(EmbedRevocationBase):
    """For the :class:`~usergroups.models.UserGroup` admin; add ``"revoke_embed_tokens"``
    to its ``actions``."""

    def get_urls(self) -> list[URLPattern]:
        return [
            object_page_url(
                self, "revoke-embed-tokens", self.revoke_embed_tokens_view, "revoke_embed_tokens"
            ),
            *super().get_urls(),
        ]

    def _revoke_embed_tokens(self, request: HttpRequest, group: UserGroup) -> bool:
        if embed.revoke_embed_tokens(group) is None:
            return False  # deleted meanwhile: its tokens went with it
        self.log_change(request, group, gettext("Revoked the embed tokens."))
        return True

    def revoke_embed_tokens_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        def revoke(group: UserGroup) -> list[Notice] | None:
            if not self._revoke_embed_tokens(request, group):
                return None
            done = gettext("The embed tokens of “%(group)s” were revoked.") % {"group": group}
            return [(messages.SUCCESS, done)]

        asked = embed_revocation_question(gettext("Revoke every embed token of this user group?"))
        return confirm_object(self, request, object_id, asked, revoke)

    @admin.action(
        permissions=["change"], description=_("Revoke embed tokens of selected user groups")
    )
    def revoke_embed_tokens(
        self, request: HttpRequest, queryset: QuerySet[UserGroup]
    ) -> HttpResponse | None:
        def revoke(groups: list[UserGroup]) -> list[Notice]:
            revoked = sum(self._revoke_embed_tokens(request, group) for group in groups)
            done = ngettext(
                "Revoked the embed tokens of %(count)s user group.",
                "Revoked the embed tokens of %(count)s user groups.",
                revoked,
            ) % {"count": revoked}
            return [(messages.SUCCESS, done)]

        asked = embed_revocation_question(gettext("Revoke every embed token of these user groups?"))
        return confirm_selected(self, request, "revoke_embed_tokens", queryset, asked, revoke)

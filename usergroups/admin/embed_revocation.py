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
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, reverse
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from usergroups.admin.common import confirmation_response, missing_object_redirect, object_page_url
from usergroups.models import UserGroup
from usergroups.services import embed

if TYPE_CHECKING:
    EmbedRevocationBase = admin.ModelAdmin[UserGroup]
else:
    EmbedRevocationBase = object


def embed_revocation_consequences() -> list[str]:
    """What revoking embed tokens does, in the language of the request."""
    return [
        gettext(
            "Every embed token minted so far for the group is refused from the moment you "
            "confirm: open dashboards show that their access was revoked."
        ),
        gettext("The group token stays as it is; embed tokens minted afterwards work."),
    ]


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
        group = self.get_object(request, unquote(object_id))
        if group is None:
            return missing_object_redirect(self, request, object_id)
        if not self.has_change_permission(request, group):
            raise PermissionDenied
        change_url = reverse(f"{self.admin_site.name}:usergroups_usergroup_change", args=[group.pk])
        if request.method == "POST":
            if self._revoke_embed_tokens(request, group):
                messages.success(
                    request,
                    gettext("The embed tokens of “%(group)s” were revoked.") % {"group": group},
                )
                return HttpResponseRedirect(change_url)
            return missing_object_redirect(self, request, object_id)
        return confirmation_response(
            self,
            request,
            title=gettext("Revoke embed tokens?"),
            question=gettext("Revoke every embed token of this user group?"),
            consequences=embed_revocation_consequences(),
            objects=[group],
            submit_label=gettext("Yes, revoke the embed tokens"),
            cancel_url=change_url,
            danger=True,
        )

    @admin.action(
        permissions=["change"], description=_("Revoke embed tokens of selected user groups")
    )
    def revoke_embed_tokens(
        self, request: HttpRequest, queryset: QuerySet[UserGroup]
    ) -> HttpResponse | None:
        if request.POST.get("post") != "yes":
            return confirmation_response(
                self,
                request,
                title=gettext("Revoke embed tokens?"),
                question=gettext("Revoke every embed token of these user groups?"),
                consequences=embed_revocation_consequences(),
                objects=queryset,
                submit_label=gettext("Yes, revoke the embed tokens"),
                cancel_url=request.get_full_path(),
                action="revoke_embed_tokens",
                danger=True,
            )
        revoked = sum(self._revoke_embed_tokens(request, group) for group in queryset)
        messages.success(
            request,
            ngettext(
                "Revoked the embed tokens of %(count)s user group.",
                "Revoked the embed tokens of %(count)s user groups.",
                revoked,
            )
            % {"count": revoked},
        )
        return None

"""Token rotation from the admin: a button on the change page and a bulk action.

Both ask first on a page of their own (POST, CSRF protected), need ``change_usergroup``,
rotate through :func:`usergroups.services.groups.rotate_group_token` (the API's
compare-and-swap and ``token_rotated`` signal), and record the rotation in the group's
history. No message, URL or page of theirs ever holds a token.
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

from usergroups import services
from usergroups.admin.common import confirmation_response, missing_object_redirect, object_page_url
from usergroups.conf import usergroups_settings
from usergroups.models import UserGroup

if TYPE_CHECKING:
    RotationBase = admin.ModelAdmin[UserGroup]
else:
    RotationBase = object


class TokenRotationMixin(RotationBase):
    """For the :class:`~usergroups.models.UserGroup` admin; add ``"rotate_tokens"`` to
    its ``actions``."""

    def get_urls(self) -> list[URLPattern]:
        return [
            object_page_url(self, "rotate-token", self.rotate_token_view, "rotate_token"),
            *super().get_urls(),
        ]

    def _rotate(self, request: HttpRequest, group: UserGroup) -> bool:
        if services.groups.rotate_group_token(group) is None:
            return False
        self.log_change(request, group, gettext("Rotated the token."))
        return True

    @staticmethod
    def _old_token_note() -> str:
        grace = usergroups_settings.ROTATION_GRACE_SECONDS
        if grace:
            return ngettext(
                "The old token still resolves for %(count)s second; it cannot be rotated.",
                "The old token still resolves for %(count)s seconds; it cannot be rotated.",
                grace,
            ) % {"count": grace}
        return gettext("The old token no longer works.")

    def _consequences(self) -> list[str]:
        return [
            gettext("A new token is made at once.") + " " + self._old_token_note(),
            gettext(
                "Every embed token minted for the group so far is revoked too: each open "
                "embedded dashboard of the group ends at its next request, until its page "
                "mints a new token."
            ),
            gettext(
                "Pages that embed dashboards with the old token need the new one: get it with "
                "GET /api/user, or here."
            ),
        ]

    def rotate_token_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        group = self.get_object(request, unquote(object_id))
        if group is None:
            return missing_object_redirect(self, request, object_id)
        if not self.has_change_permission(request, group):
            raise PermissionDenied
        change_url = reverse(f"{self.admin_site.name}:usergroups_usergroup_change", args=[group.pk])
        if request.method == "POST":
            if self._rotate(request, group):
                rotated = gettext("The token of “%(group)s” was rotated.") % {"group": group}
                messages.success(request, rotated + " " + self._old_token_note())
            else:
                messages.error(
                    request,
                    gettext("The token of “%(group)s” changed meanwhile; nothing was rotated.")
                    % {"group": group},
                )
            return HttpResponseRedirect(change_url)
        return confirmation_response(
            self,
            request,
            title=gettext("Rotate token?"),
            question=gettext("Rotate the token of this user group?"),
            consequences=self._consequences(),
            objects=[group],
            submit_label=gettext("Yes, rotate the token"),
            cancel_url=change_url,
        )

    @admin.action(permissions=["change"], description=_("Rotate tokens of selected user groups"))
    def rotate_tokens(
        self, request: HttpRequest, queryset: QuerySet[UserGroup]
    ) -> HttpResponse | None:
        if request.POST.get("post") != "yes":
            return confirmation_response(
                self,
                request,
                title=gettext("Rotate tokens?"),
                question=gettext("Rotate the tokens of these user groups?"),
                consequences=self._consequences(),
                objects=queryset,
                submit_label=gettext("Yes, rotate the tokens"),
                cancel_url=request.get_full_path(),
                action="rotate_tokens",
            )
        rotated = changed = 0
        for group in queryset:
            if self._rotate(request, group):
                rotated += 1
            else:
                changed += 1
        if rotated:
            done = ngettext(
                "Rotated the tokens of %(count)s user group.",
                "Rotated the tokens of %(count)s user groups.",
                rotated,
            ) % {"count": rotated}
            messages.success(request, done + " " + self._old_token_note())
        if changed:
            messages.warning(
                request,
                ngettext(
                    "%(count)s token changed meanwhile and was not rotated; try it again.",
                    "%(count)s tokens changed meanwhile and were not rotated; try them again.",
                    changed,
                )
                % {"count": changed},
            )
        return None

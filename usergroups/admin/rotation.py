"""Token rotation from the admin: a button on the change page and a bulk action.

Both ask first on a page of their own (POST, CSRF protected), need ``change_usergroup``,
rotate through :func:`usergroups.services.groups.rotate_group_token` (the API's
compare-and-swap and ``token_rotated`` signal), and record the rotation in the group's
history. No message, URL or page of theirs ever holds a token.
"""

from typing import TYPE_CHECKING

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from usergroups import services
from usergroups.admin.common import object_page_url
from usergroups.admin.confirm import Notice, Question, confirm_object, confirm_selected
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

    def _question(self, title: str, question: str, submit_label: str) -> Question:
        return Question(
            title=title,
            question=question,
            consequences=[
                gettext("A new token is made at once.") + " " + self._old_token_note(),
                gettext(
                    "Every embed token minted for the group so far is revoked too: each open "
                    "embedded dashboard of the group ends at its next request, until its page "
                    "mints a new token."
                ),
                gettext(
                    "Pages that embed dashboards with the old token need the new one: get it "
                    "with GET /api/user, or here."
                ),
            ],
            submit_label=submit_label,
        )

    def rotate_token_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        def rotate(group: UserGroup) -> list[Notice]:
            if not self._rotate(request, group):
                changed = gettext(
                    "The token of “%(group)s” changed meanwhile; nothing was rotated."
                )
                return [(messages.ERROR, changed % {"group": group})]
            rotated = gettext("The token of “%(group)s” was rotated.") % {"group": group}
            return [(messages.SUCCESS, rotated + " " + self._old_token_note())]

        asked = self._question(
            gettext("Rotate token?"),
            gettext("Rotate the token of this user group?"),
            gettext("Yes, rotate the token"),
        )
        return confirm_object(self, request, object_id, asked, rotate)

    @admin.action(permissions=["change"], description=_("Rotate tokens of selected user groups"))
    def rotate_tokens(
        self, request: HttpRequest, queryset: QuerySet[UserGroup]
    ) -> HttpResponse | None:
        def rotate(groups: list[UserGroup]) -> list[Notice]:
            rotated = sum(self._rotate(request, group) for group in groups)
            changed = len(groups) - rotated
            notices: list[Notice] = []
            if rotated:
                done = ngettext(
                    "Rotated the tokens of %(count)s user group.",
                    "Rotated the tokens of %(count)s user groups.",
                    rotated,
                ) % {"count": rotated}
                notices.append((messages.SUCCESS, done + " " + self._old_token_note()))
            if changed:
                missed = ngettext(
                    "%(count)s token changed meanwhile and was not rotated; try it again.",
                    "%(count)s tokens changed meanwhile and were not rotated; try them again.",
                    changed,
                ) % {"count": changed}
                notices.append((messages.WARNING, missed))
            return notices

        asked = self._question(
            gettext("Rotate tokens?"),
            gettext("Rotate the tokens of these user groups?"),
            gettext("Yes, rotate the tokens"),
        )
        return confirm_selected(self, request, "rotate_tokens", queryset, asked, rotate)

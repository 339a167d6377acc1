"""Replacing API keys from the admin: the "Rotate selected API keys" action.

It asks first, with the grace period the ``rotate_api_key`` command takes (hours the old
key keeps working, 0 to revoke it at once), then rotates through
:func:`usergroups.services.keys.rotate_key` and redirects to a page that shows each new
key once, as the add view does: until that GET the keys wait in the session, sealed
(:func:`usergroups.admin.common.keep_for_secret_page`); never in a message or a URL. It
needs both ``add_apikey`` (it makes keys) and ``change_apikey`` (it ends others).
"""

from datetime import timedelta
from typing import TYPE_CHECKING

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext, ngettext_lazy
from django.utils.translation import gettext_lazy as _
from django.views.decorators.debug import sensitive_variables

from usergroups.admin.common import (
    keep_for_secret_page,
    secret_html,
    secret_page_context,
    shown_once_redirect,
    take_for_secret_page,
)
from usergroups.admin.confirm import (
    Notice,
    Question,
    confirm_selected,
    confirming,
    skipped_note,
)
from usergroups.models import APIKey
from usergroups.scopes import ordered
from usergroups.services import keys

if TYPE_CHECKING:
    KeyRotationBase = admin.ModelAdmin[APIKey]
else:
    KeyRotationBase = object

#: The page of the new keys, as :func:`keep_for_secret_page` names it.
ROTATED_PAGE = "apikey:rotated"
#: The selected keys that rotating leaves alone, on its confirmation page.
NOT_USABLE = ngettext_lazy(
    "%(count)s selected key revoked or expired stays as it is.",
    "%(count)s selected keys revoked or expired stay as they are.",
    "count",
)
DEFAULT_GRACE_HOURS = 24
#: A week: longer overlaps are a second key, not a rotation.
MAX_GRACE_HOURS = 24 * 7


class GraceForm(forms.Form):
    grace_hours = forms.IntegerField(
        label=_("Old key works for (hours)"),
        min_value=0,
        max_value=MAX_GRACE_HOURS,
        initial=DEFAULT_GRACE_HOURS,
        help_text=_(
            "How long the old key keeps working, so callers can switch to the new one "
            "without downtime; 0 revokes it at once."
        ),
    )


class KeyRotationMixin(KeyRotationBase):
    """For the :class:`~usergroups.models.APIKey` admin; add ``"rotate_keys"`` to its
    ``actions``."""

    def has_rotate_permission(self, request: HttpRequest) -> bool:
        """Both: rotating makes a key and ends another. (An action's ``permissions`` list
        lets in staff holding any one of them, so the two are asked here together.)"""
        return self.has_add_permission(request) and self.has_change_permission(request)

    @admin.action(permissions=["rotate"], description=_("Rotate selected API keys"))
    def rotate_keys(self, request: HttpRequest, queryset: QuerySet[APIKey]) -> HttpResponse | None:
        grace_form = GraceForm(request.POST if confirming(request) else None)

        def rotate(api_keys: list[APIKey]) -> list[Notice]:
            self._rotate(request, api_keys, grace_form.cleaned_data["grace_hours"])
            return []  # the page of the new keys says it

        usable = list(queryset.usable().select_related("workspace"))  # type: ignore[attr-defined]
        asked = Question(
            title=gettext("Rotate API keys?"),
            question=gettext("Replace these API keys by new ones?"),
            consequences=[
                gettext(
                    "Each key is replaced by a new one with the same workspace, name and "
                    "scopes, shown once on the next page."
                ),
                gettext(
                    "The old key keeps working for the hours you choose below, then is refused."
                ),
                *skipped_note(queryset, usable, NOT_USABLE),
            ],
            submit_label=gettext("Yes, rotate"),
        )
        opts = self.model._meta
        return confirm_selected(
            self,
            request,
            "rotate_keys",
            usable,
            asked,
            rotate,
            nothing_to_do=gettext(
                "The selected API keys are revoked or expired: nothing to rotate."
            ),
            form=grace_form,
            then=reverse(f"{self.admin_site.name}:{opts.app_label}_{opts.model_name}_rotated"),
        )

    @sensitive_variables("rotated")
    def _rotate(self, request: HttpRequest, api_keys: list[APIKey], grace_hours: int) -> None:
        """Rotates ``api_keys``, keeping the new keys for the page that shows them once."""
        rotated: list[tuple[int, int, str]] = []
        for old in api_keys:
            try:
                new, key = keys.rotate_key(old, timedelta(hours=grace_hours))
            except keys.KeyNotRotatable:  # revoked or expired meanwhile
                continue
            self.log_change(
                request,
                old,
                gettext("Rotated: replaced by %(prefix)s…, grace %(hours)s h.")
                % {"prefix": new.prefix, "hours": grace_hours},
            )
            self.log_addition(
                request, new, gettext("Created by rotating %(prefix)s….") % {"prefix": old.prefix}
            )
            rotated.append((old.pk, new.pk, key))
        keep_for_secret_page(
            request, ROTATED_PAGE, {"rotated": rotated, "grace_hours": grace_hours}
        )

    def get_urls(self) -> list[URLPattern]:
        opts = self.model._meta
        return [
            path(
                "rotated/",
                self.admin_site.admin_view(self.rotated_view),
                name=f"{opts.app_label}_{opts.model_name}_rotated",
            ),
            *super().get_urls(),
        ]

    @sensitive_variables("kept")
    def rotated_view(self, request: HttpRequest) -> HttpResponse:
        """The new keys of the last rotation, on the first GET after it only."""
        if not self.has_rotate_permission(request):
            raise PermissionDenied
        kept = take_for_secret_page(request, ROTATED_PAGE)
        if kept is None:
            return shown_once_redirect(self, request)
        by_pk = APIKey.objects.select_related("workspace").in_bulk(
            [pk for old_and_new in kept["rotated"] for pk in old_and_new[:2]]
        )
        rotated = [
            {
                "old": by_pk[old],
                "new": by_pk[new],
                "scopes": ", ".join(ordered(by_pk[new].scopes)),
                "secret": secret_html(
                    key,
                    element_id=f"new-api-key-{new}",
                    label=gettext("New API key"),
                    revealed=True,
                ),
            }
            for old, new, key in kept["rotated"]
            if old in by_pk and new in by_pk  # deleted meanwhile: nothing to show
        ]
        context = secret_page_context(
            self,
            request,
            gettext("Copy your new API keys"),
            rotated=rotated,
            grace_hours=kept["grace_hours"],
        )
        return TemplateResponse(request, "usergroups/admin/apikey/rotated.html", context)

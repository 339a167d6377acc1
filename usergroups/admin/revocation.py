"""Revocation of API keys from the admin: a button on the change page and a bulk action.

Both ask first on a page of their own (POST, CSRF protected) and need ``change_apikey``.
A revoked key is refused by the API at once, becomes read-only here, and stays revoked:
nothing in the admin clears ``revoked_at``.
"""

from typing import TYPE_CHECKING

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern
from django.utils.translation import gettext, ngettext, ngettext_lazy
from django.utils.translation import gettext_lazy as _

from usergroups.admin.common import object_page_url
from usergroups.admin.confirm import (
    Notice,
    Question,
    confirm_object,
    confirm_selected,
    skipped_note,
)
from usergroups.models import APIKey
from usergroups.services import keys

if TYPE_CHECKING:
    RevocationBase = admin.ModelAdmin[APIKey]
else:
    RevocationBase = object


#: The selected keys that revoking leaves alone, on its confirmation page.
ALREADY_REVOKED = ngettext_lazy(
    "%(count)s selected key already revoked stays as it is.",
    "%(count)s selected keys already revoked stay as they are.",
    "count",
)


def revoke_consequences() -> list[str]:
    """What revoking does, in the language of the request."""
    return [
        gettext("Requests that use the key are refused (401) from the moment you confirm."),
        gettext("Revocation cannot be undone. To let a caller in again, create a new key."),
    ]


class KeyRevocationMixin(RevocationBase):
    """For the :class:`~usergroups.models.APIKey` admin; add ``"revoke_keys"`` to its
    ``actions``."""

    def get_urls(self) -> list[URLPattern]:
        return [
            object_page_url(self, "revoke", self.revoke_view, "revoke"),
            *super().get_urls(),
        ]

    def _revoke(self, request: HttpRequest, api_key: APIKey) -> None:
        keys.revoke_key(api_key)
        self.log_change(request, api_key, gettext("Revoked the key."))

    def revoke_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        def already_revoked(api_key: APIKey) -> str | None:
            if not api_key.is_revoked:
                return None
            return gettext("The API key %(prefix)s… is already revoked.") % {
                "prefix": api_key.prefix
            }

        def revoke(api_key: APIKey) -> list[Notice]:
            self._revoke(request, api_key)
            done = gettext("The API key %(prefix)s… was revoked. Requests with it are refused.")
            return [(messages.SUCCESS, done % {"prefix": api_key.prefix})]

        asked = Question(
            title=gettext("Revoke API key?"),
            question=gettext("Revoke this API key?"),
            consequences=revoke_consequences(),
            submit_label=gettext("Yes, revoke the key"),
            danger=True,
        )
        return confirm_object(self, request, object_id, asked, revoke, already_revoked)

    @admin.action(permissions=["change"], description=_("Revoke selected API keys"))
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[APIKey]) -> HttpResponse | None:
        def revoke(api_keys: list[APIKey]) -> list[Notice]:
            for api_key in api_keys:
                self._revoke(request, api_key)
            done = ngettext(
                "Revoked %(count)s API key. Requests with it are refused from now on.",
                "Revoked %(count)s API keys. Requests with them are refused from now on.",
                len(api_keys),
            ) % {"count": len(api_keys)}
            return [(messages.SUCCESS, done)]

        live = list(queryset.filter(revoked_at__isnull=True))
        asked = Question(
            title=gettext("Revoke API keys?"),
            question=gettext("Revoke these API keys?"),
            consequences=revoke_consequences() + skipped_note(queryset, live, ALREADY_REVOKED),
            submit_label=gettext("Yes, revoke the keys"),
            danger=True,
        )
        return confirm_selected(
            self,
            request,
            "revoke_keys",
            live,
            asked,
            revoke,
            nothing_to_do=gettext("The selected API keys are already revoked."),
        )

"""Revocation of API keys from the admin: a button on the change page and a bulk action.

Both ask first on a page of their own (POST, CSRF protected) and need ``change_apikey``.
A revoked key is refused by the API at once, becomes read-only here, and stays revoked:
nothing in the admin clears ``revoked_at``.
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
from usergroups.models import APIKey
from usergroups.services import keys

if TYPE_CHECKING:
    RevocationBase = admin.ModelAdmin[APIKey]
else:
    RevocationBase = object


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
        api_key = self.get_object(request, unquote(object_id))
        if api_key is None:
            return missing_object_redirect(self, request, object_id)
        change_url = reverse(f"{self.admin_site.name}:usergroups_apikey_change", args=[api_key.pk])
        if api_key.is_revoked:
            messages.info(
                request,
                gettext("The API key %(prefix)s… is already revoked.") % {"prefix": api_key.prefix},
            )
            return HttpResponseRedirect(change_url)
        if not self.has_change_permission(request, api_key):
            raise PermissionDenied
        if request.method == "POST":
            self._revoke(request, api_key)
            messages.success(
                request,
                gettext("The API key %(prefix)s… was revoked. Requests with it are refused.")
                % {"prefix": api_key.prefix},
            )
            return HttpResponseRedirect(change_url)
        return confirmation_response(
            self,
            request,
            title=gettext("Revoke API key?"),
            question=gettext("Revoke this API key?"),
            consequences=revoke_consequences(),
            objects=[api_key],
            submit_label=gettext("Yes, revoke the key"),
            cancel_url=change_url,
            danger=True,
        )

    @admin.action(permissions=["change"], description=_("Revoke selected API keys"))
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[APIKey]) -> HttpResponse | None:
        keys = list(queryset.filter(revoked_at__isnull=True))
        if not keys:
            messages.info(request, gettext("The selected API keys are already revoked."))
            return None
        if request.POST.get("post") != "yes":
            skipped = queryset.count() - len(keys)
            consequences = revoke_consequences()
            if skipped:
                consequences.append(
                    ngettext(
                        "%(count)s selected key already revoked stays as it is.",
                        "%(count)s selected keys already revoked stay as they are.",
                        skipped,
                    )
                    % {"count": skipped}
                )
            return confirmation_response(
                self,
                request,
                title=gettext("Revoke API keys?"),
                question=gettext("Revoke these API keys?"),
                consequences=consequences,
                objects=keys,
                submit_label=gettext("Yes, revoke the keys"),
                cancel_url=request.get_full_path(),
                action="revoke_keys",
                danger=True,
            )
        for api_key in keys:
            self._revoke(request, api_key)
        messages.success(
            request,
            ngettext(
                "Revoked %(count)s API key. Requests with it are refused from now on.",
                "Revoked %(count)s API keys. Requests with them are refused from now on.",
                len(keys),
            )
            % {"count": len(keys)},
        )
        return None

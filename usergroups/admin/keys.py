"""API keys: made on the server, shown once, then known by their prefix; revoked for good."""

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.forms import Media
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.functional import lazy
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from usergroups import crypto
from usergroups.admin.common import (
    MEDIA,
    ActsAsStaff,
    OfferedLookupsOnly,
    SecretShownOnce,
    secret_html,
    secret_page_context,
    when,
)
from usergroups.admin.forms import APIKeyAddForm, APIKeyChangeForm
from usergroups.admin.key_rotation import KeyRotationMixin
from usergroups.admin.revocation import KeyRevocationMixin
from usergroups.models import APIKey
from usergroups.scopes import SCOPES, field_name, ordered
from usergroups.services import keys

if TYPE_CHECKING:
    KeyAdminBase = admin.ModelAdmin[APIKey]
else:
    KeyAdminBase = admin.ModelAdmin


class StateFilter(admin.SimpleListFilter):
    title = _("state")
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            ("active", gettext("Active")),
            ("expired", gettext("Expired")),
            ("revoked", gettext("Revoked")),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        now = timezone.now()
        not_revoked = Q(revoked_at__isnull=True)
        if self.value() == "active":
            return queryset.filter(not_revoked, Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        if self.value() == "expired":
            return queryset.filter(not_revoked, expires_at__lte=now)
        if self.value() == "revoked":
            return queryset.filter(revoked_at__isnull=False)
        return queryset


class HasScopeFilter(admin.SimpleListFilter):
    title = _("has scope")
    parameter_name = "has_scope"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(scope, scope) for scope in SCOPES]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() in SCOPES:
            return queryset.filter(**{field_name(str(self.value())): True})
        return queryset


class LacksScopeFilter(HasScopeFilter):
    title = _("lacks scope")
    parameter_name = "lacks_scope"

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() in SCOPES:
            return queryset.filter(**{field_name(str(self.value())): False})
        return queryset


def search_help() -> str:
    return gettext("Search by name or prefix (the first %(length)s characters).") % {
        "length": crypto.KEY_LOOKUP_LENGTH
    }


@admin.register(APIKey)
class APIKeyAdmin(
    ActsAsStaff,
    OfferedLookupsOnly,
    SecretShownOnce,
    KeyRevocationMixin,
    KeyRotationMixin,
    KeyAdminBase,
):
    change_form_template = "usergroups/admin/apikey/change_form.html"
    list_display = [
        "key_prefix",
        "name",
        "workspace",
        "scope_names",
        "created",
        "last_used",
        "expires",
        "state",
    ]
    list_display_links = ["key_prefix", "name"]
    list_filter = [StateFilter, HasScopeFilter, LacksScopeFilter, "workspace", "created_at"]
    list_select_related = ["workspace"]
    search_fields = ["prefix", "name"]
    # Lazy, so that it is put together in the language of each request.
    search_help_text = lazy(search_help, str)()
    ordering = ["-created_at", "-id"]
    actions = ["rotate_keys", "revoke_keys"]
    empty_value_display = "—"

    @property
    def media(self) -> Media:
        return super().media + MEDIA

    def get_form(
        self, request: HttpRequest, obj: APIKey | None = None, change: bool = False, **kwargs: Any
    ) -> Any:
        kwargs["form"] = APIKeyChangeForm if obj is not None else APIKeyAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fieldsets(self, request: HttpRequest, obj: APIKey | None = None) -> Any:
        if obj is None:
            return [
                (
                    None,
                    {
                        "fields": ["workspace", "name", "expires_at", "scopes"],
                        "description": _(
                            "The key is generated on the server when you create it, and "
                            "shown to you once, on the next page."
                        ),
                    },
                )
            ]
        can_change = self.has_change_permission(request, obj)
        expires = "expires_at" if can_change else "expires"
        scopes = "scopes" if can_change else "scope_names"
        return [
            (None, {"fields": ["key_prefix", "name", "workspace", "state", scopes]}),
            (_("Validity"), {"fields": ["created", expires, "last_used", "revoked"]}),
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: APIKey | None = None) -> list[str]:
        if obj is None:
            return []
        return [
            "key_prefix",
            "workspace",
            "state",
            "scope_names",
            "created",
            "expires",
            "last_used",
            "revoked",
        ]

    def has_change_permission(self, request: HttpRequest, obj: APIKey | None = None) -> bool:
        if obj is not None and obj.is_revoked:
            return False  # Revoked keys are read-only.
        return super().has_change_permission(request, obj)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[APIKey], search_term: str
    ) -> tuple[QuerySet[APIKey], bool]:
        # A whole key pasted into the search box finds its row by digest, as the API does:
        # only the right key finds it, not any key that shares its prefix.
        term = search_term.strip()
        if crypto.looks_like_api_key(term):
            return queryset.filter(digest=crypto.digest(term)), False
        return super().get_search_results(request, queryset, search_term)

    # Columns ---------------------------------------------------------------------------

    @admin.display(description=_("Prefix"), ordering="prefix")
    def key_prefix(self, obj: APIKey) -> str:
        return format_html('<code class="ug-prefix">{}…</code>', obj.prefix)

    @admin.display(description=_("Scopes"))
    def scope_names(self, obj: APIKey) -> str:
        return ", ".join(ordered(obj.scopes)) or gettext("none")

    @admin.display(description=_("Created"), ordering="created_at")
    def created(self, obj: APIKey) -> str:
        return when(obj.created_at)

    @admin.display(description=_("Last used"), ordering="last_used_at")
    def last_used(self, obj: APIKey) -> str:
        return when(obj.last_used_at, empty=gettext("Never"))

    @admin.display(description=_("Expires"), ordering="expires_at")
    def expires(self, obj: APIKey) -> str:
        return when(obj.expires_at, empty=gettext("Never"))

    @admin.display(description=_("Revoked"))
    def revoked(self, obj: APIKey) -> str:
        return when(obj.revoked_at, empty=gettext("Not revoked"))

    @admin.display(description=_("State"))
    def state(self, obj: APIKey) -> str:
        if obj.is_revoked:
            label, css = gettext("Revoked"), "revoked"
        elif obj.is_expired:
            label, css = gettext("Expired"), "expired"
        else:
            label, css = gettext("Active"), "active"
        return format_html('<span class="ug-state ug-state-{}">{}</span>', css, label)

    # Creation: the key is shown once, on a page of its own -------------------------------

    # Writes go through usergroups.services.keys, as the API's and the commands' do.

    def save_model(self, request: HttpRequest, obj: APIKey, form: Any, change: Any) -> None:
        scopes = set(form.cleaned_data["scopes"])
        if change:
            keys.change_key(obj, list(form.fields))
            keys.narrow_scopes(obj, scopes)  # takes the unticked ones; never gives one
        else:
            obj.set_scopes(scopes)
            self.keep_secret(obj, keys.issue_key(obj))

    def delete_model(self, request: HttpRequest, obj: APIKey) -> None:
        keys.delete_key(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for api_key in queryset:
            keys.delete_key(api_key)

    def secret_page(self, request: HttpRequest, obj: APIKey, secret: str) -> HttpResponse:
        context = secret_page_context(
            self,
            request,
            gettext("Copy your new API key"),
            api_key=obj,
            scopes=self.scope_names(obj),
            secret=secret_html(
                secret, element_id="new-api-key", label=gettext("API key"), revealed=True
            ),
            change_url=reverse(f"{self.admin_site.name}:usergroups_apikey_change", args=[obj.pk]),
        )
        return TemplateResponse(request, "usergroups/admin/apikey/created.html", context)

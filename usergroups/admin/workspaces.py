"""Workspaces: who calls the API, with how many groups and usable keys."""

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.db.models import Model, QuerySet
from django.forms import Media
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from usergroups.admin.common import MEDIA, ActsAsStaff, OfferedLookupsOnly, subquery_count, when
from usergroups.models import APIKey, UserGroup, Workspace

if TYPE_CHECKING:
    WorkspaceAdminBase = admin.ModelAdmin[Workspace]
else:
    WorkspaceAdminBase = admin.ModelAdmin


@admin.register(Workspace)
class WorkspaceAdmin(ActsAsStaff, OfferedLookupsOnly, WorkspaceAdminBase):
    list_display = ["display_name", "slug", "group_count", "active_key_count", "created"]
    list_display_links = ["display_name", "slug"]
    search_fields = ["slug", "name"]
    search_help_text = _("Search by slug or name.")
    list_filter = ["created_at"]
    prepopulated_fields = {"slug": ["name"]}
    # Django's pages, saying why a workspace with audit events is not deleted.
    delete_confirmation_template = "usergroups/admin/workspace/delete_confirmation.html"
    delete_selected_confirmation_template = (
        "usergroups/admin/workspace/delete_selected_confirmation.html"
    )
    readonly_fields = ["created", "group_count", "active_key_count"]
    fieldsets = [
        (
            None,
            {
                "fields": ["name", "slug"],
                "description": _(
                    "A workspace is an account that calls the API. Its API keys see only its "
                    "own user groups."
                ),
            },
        ),
        (_("Usage"), {"fields": ["group_count", "active_key_count", "created"]}),
    ]

    @property
    def media(self) -> Media:
        return super().media + MEDIA

    def get_queryset(self, request: HttpRequest) -> QuerySet[Workspace]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                group_count=subquery_count(UserGroup.objects.all(), "workspace"),
                active_key_count=subquery_count(APIKey.objects.usable(), "workspace"),
            )
        )

    def get_fieldsets(self, request: HttpRequest, obj: Workspace | None = None) -> Any:
        if obj is None:
            return self.fieldsets[:1]
        return self.fieldsets

    def get_prepopulated_fields(
        self, request: HttpRequest, obj: Workspace | None = None
    ) -> dict[str, Any]:
        return self.prepopulated_fields if obj is None else {}

    @admin.display(description=_("Workspace"), ordering="name")
    def display_name(self, obj: Workspace) -> str:
        return str(obj)

    def _link(self, model: str, obj: Model, count: int, extra: str = "") -> str:
        url = reverse(f"{self.admin_site.name}:usergroups_{model}_changelist")
        return format_html(
            '<a href="{}?workspace__id__exact={}{}">{}</a>', url, obj.pk, extra, count
        )

    @admin.display(description=_("Created"), ordering="created_at")
    def created(self, obj: Workspace) -> str:
        return when(obj.created_at)

    @admin.display(description=_("User groups"), ordering="group_count")
    def group_count(self, obj: Any) -> str:
        return self._link("usergroup", obj, obj.group_count)

    @admin.display(description=_("Active API keys"), ordering="active_key_count")
    def active_key_count(self, obj: Any) -> str:
        return self._link("apikey", obj, obj.active_key_count, "&state=active")
